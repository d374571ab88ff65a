// Every relative link in README.md and docs/**/*.md leads somewhere: the
// file (or directory) exists, and an anchor names a heading of the target
// page as GitHub makes it (or an explicit <a id>/<a name>). Links inside
// code (fenced blocks and `spans`) are text, not links, and are skipped;
// absolute URLs (https:, mailto:, ...) are not followed: the network is not
// the suite's to depend on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./harness.mjs";

/** The pages whose links are checked: README.md and every .md under docs/. */
function pages() {
  const list = [path.join(ROOT, "README.md")];
  const docs = path.join(ROOT, "docs");
  if (existsSync(docs)) {
    for (const file of readdirSync(docs, { recursive: true })) {
      if (String(file).endsWith(".md")) list.push(path.join(docs, String(file)));
    }
  }
  return list.sort();
}

/** `text` with fenced code blocks blanked out (line numbers kept). */
function withoutFences(text) {
  let fence = null;
  return text
    .split("\n")
    .map((line) => {
      const opening = line.match(/^\s{0,3}(`{3,}|~{3,})/);
      if (fence === null && opening) {
        fence = opening[1];
        return "";
      }
      if (fence !== null) {
        if (line.trim().startsWith(fence[0].repeat(fence.length)) && line.trim().replace(/[`~]/g, "") === "") fence = null;
        return "";
      }
      return line;
    })
    .join("\n");
}

/**
 * A heading's anchor as GitHub derives it: the heading's text (code spans
 * keep their text, links their label, emphasis markers go), lower-cased,
 * every character but letters, digits, spaces, `-` and `_` dropped, spaces
 * made `-`.
 */
export function githubSlug(heading) {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors a page offers: its headings' slugs (a repeated one gets -1, -2, ...) and explicit ids. */
export function anchorsOf(text) {
  const anchors = new Set();
  const seen = new Map();
  const body = withoutFences(text);
  for (const [, heading] of body.matchAll(/^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of body.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id);
  return anchors;
}

/** The relative links of a page, each with its line: inline `[text](target)`, images and reference definitions. */
export function linksOf(text) {
  const links = [];
  const lines = withoutFences(text).split("\n");
  lines.forEach((raw, index) => {
    const line = raw.replace(/(`+)[\s\S]*?\1/g, (span) => " ".repeat(span.length));
    const targets = [
      ...[...line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
      ...[...line.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/g)].map((m) => m[1]),
    ];
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
      links.push({ target, line: index + 1 });
    }
  });
  return links;
}

/** What is wrong with each broken link of `file` (whose text is `text`): an empty list when none is. */
export function brokenLinks(file, text, read = (f) => readFileSync(f, "utf8")) {
  const broken = [];
  for (const { target, line } of linksOf(text)) {
    const [pathPart, anchor] = target.split("#", 2);
    const where = `${path.relative(ROOT, file)}:${line}: ${target}`;
    const resolved = pathPart === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart));
    if (!existsSync(resolved)) {
      broken.push(`${where}: no such file ${path.relative(ROOT, resolved)}`);
      continue;
    }
    if (anchor === undefined || anchor === "") continue;
    if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
      broken.push(`${where}: an anchor into a file that is not a Markdown page`);
      continue;
    }
    const anchors = anchorsOf(resolved === file ? text : read(resolved));
    if (!anchors.has(decodeURIComponent(anchor))) {
      broken.push(`${where}: no heading makes the anchor #${anchor} in ${path.relative(ROOT, resolved)}`);
    }
  }
  return broken;
}

test("every relative link and anchor in README.md and docs/ leads somewhere", () => {
  const files = pages();
  let links = 0;
  const broken = [];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    links += linksOf(text).length;
    broken.push(...brokenLinks(file, text));
  }
  assert.deepEqual(broken, [], `broken links in ${files.length} pages:\n${broken.join("\n")}`);
  assert.ok(links > 0, "no relative link found: the link reader reads nothing");
});

test("the checker finds a missing file, a missing anchor and an anchor into code; it skips code and URLs", () => {
  const file = path.join(ROOT, "README.md");
  const text = [
    "# A page",
    "## The `withKey` helper: (contract §1b)",
    "## Twice",
    "## Twice",
    "[ok](#a-page) [ok](#the-withkey-helper-contract-1b) [ok](#twice-1) [ok](README.md#a-page)",
    "[gone](no-such-page.md) [no anchor](#not-a-heading) [into code](Cargo.toml#x)",
    "`[in code](missing.md)` [url](https://example.com/missing.md)",
    "```md",
    "[in a fence](missing-too.md)",
    "```",
  ].join("\n");
  const broken = brokenLinks(file, text, () => text);
  assert.equal(broken.length, 3, broken.join("\n"));
  assert.match(broken[0], /no-such-page\.md: no such file/);
  assert.match(broken[1], /#not-a-heading: no heading makes the anchor/);
  assert.match(broken[2], /Cargo\.toml#x: an anchor into a file that is not a Markdown page/);
});
