// Builds the front end into ../gwatch_nb/static/ (shipped in the Python package, so users
// need no node): widget.js (the timeline widget's anywidget ESM) + widget.css;
// runtime.js, the only bundle with vega/vega-lite/vega-embed inlined: the charts widget's
// anywidget ESM and the runtime exported pages inline (reports and comparisons) +
// report.css; compare_widget.js + compare.css: runs compared in a notebook.
//
// Each output starts with a hash of the sources it came from; tests/test_widget_bundle.py
// recomputes it, so a bundle left stale against js/ fails the test suite.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "gwatch_nb", "static");

/** The files the bundle depends on (besides node_modules, pinned by package-lock.json). */
function sourceFiles() {
  const files = ["build.mjs", "package.json", "package-lock.json", "tsconfig.json"];
  const walk = (dir) => {
    for (const entry of readdirSync(join(here, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(path.split(sep).join("/"));
    }
  };
  walk("src");
  return files.sort();
}

/** sha256 over "path\0bytes\0" of each source file in sorted order. */
function sourceHash() {
  const hash = createHash("sha256");
  for (const file of sourceFiles()) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(here, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const banner = `/* gwatch-nb front end, built by js/build.mjs from sources sha256:${sourceHash()} */`;
const common = {
  bundle: true,
  minify: true,
  target: "es2020",
  legalComments: "eof",
  banner: { js: banner, css: banner },
  logLevel: "info",
};

await Promise.all([
  esbuild.build({ ...common, entryPoints: [join(here, "src", "index.ts")], format: "esm",
                  outfile: join(out, "widget.js") }),
  esbuild.build({ ...common, entryPoints: [join(here, "src", "widget.css")], outfile: join(out, "widget.css") }),
  esbuild.build({ ...common, entryPoints: [join(here, "src", "runtime.ts")], format: "esm",
                  outfile: join(out, "runtime.js") }),
  esbuild.build({ ...common, entryPoints: [join(here, "src", "report.css")], outfile: join(out, "report.css") }),
  // Runs compared (gwatch_nb/comparison/widget.py, comparison/page.py).
  esbuild.build({ ...common, entryPoints: [join(here, "src", "compare_widget.ts")], format: "esm",
                  outfile: join(out, "compare_widget.js") }),
  esbuild.build({ ...common, entryPoints: [join(here, "src", "compare.css")], outfile: join(out, "compare.css") }),
]);
console.log(`built into ${relative(process.cwd(), out) || "."}`);
