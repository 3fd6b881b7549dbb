"""``gwatch.common``: what every gwatch tool shares (reports: ``gwatch.common.format``)."""
