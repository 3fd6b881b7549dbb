"""A report page read back as HTML: its ids, timelines, charts, scripts and anything it would load by URL."""
import json
from html.parser import HTMLParser


class Page(HTMLParser):
    """Elements of interest of a report: ids, references, scripts and anything loaded by URL."""

    def __init__(self, text: str):
        super().__init__()
        self.ids, self.timelines, self.charts, self.loads, self.tags = [], [], [], [], []
        self.json = {}
        self._script = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if "data-gw-timeline" in attrs:
            self.timelines.append(attrs["data-gw-timeline"])
        if "data-gw-chart" in attrs:
            self.charts.append(attrs["data-gw-chart"])
        for name in ("src", "href", "data", "srcset", "poster", "action"):
            if name in attrs and not attrs[name].startswith("#"):
                self.loads.append((tag, name, attrs[name]))
        if tag == "link":
            self.loads.append((tag, "link", attrs))
        self._script = attrs.get("id") if tag == "script" and attrs.get("type") == "application/json" else None

    def handle_data(self, data):
        if self._script:
            self.json[self._script] = json.loads(data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None
