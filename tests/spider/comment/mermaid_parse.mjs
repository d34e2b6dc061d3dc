// Parse each Mermaid diagram given as a JSON list of strings on stdin with mermaid's own
// parser (the one GitHub renders with); print one JSON result per diagram.
// Run from a folder whose node_modules holds mermaid and jsdom (tests/spider/comment/
// test_mermaid.py installs them from the npm registry).
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const key of ["Element", "HTMLElement", "Node", "DOMParser", "getComputedStyle"]) {
  if (!(key in globalThis)) globalThis[key] = dom.window[key];
}
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
const diagrams = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const text of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (err) {
    results.push({ ok: false, error: String(err && err.message ? err.message : err) });
  }
}
process.stdout.write(JSON.stringify(results));
