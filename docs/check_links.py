"""Checks the links of README.md and docs/*.md, which `mkdocs build --strict`
sees only in part (README.md is outside the site):

- every relative link or image names a file that exists, and a `#anchor`
  names a heading of that page (headings made into anchors as mkdocs and
  GitHub both make them for plain headings);
- every repository path written as code (`examples/heat.py`,
  `include/tack.h`) exists, in a full checkout (the wheel's test run copies
  only some folders).

    python docs/check_links.py          # prints each problem; exit 1 if any
"""
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Top-level folders whose files the docs name as code.
TREE = ("bench", "docs", "examples", "include", "python", "src", "tests", ".ci")
REPO_PATH = re.compile(r"^(?:%s)/[\w./-]*[\w/]$" % "|".join(re.escape(t) for t in TREE))
FULL_TREE = os.path.exists(os.path.join(ROOT, "include", "tack.h"))


def pages():
    found = [os.path.join(ROOT, "README.md")]
    found += sorted(os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".md"))
    return [p for p in found if os.path.exists(p)]


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(heading):
    """The anchor of a heading: markup dropped, lower case, punctuation
    other than '-' and '_' dropped, runs of spaces and hyphens one '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            cache[path] = {slug(m.group(2)) for _, line in prose_lines(f.read())
                           for m in [HEADING.match(line)] if m}
    return cache[path]


def check_page(path):
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    where = os.path.relpath(path, ROOT)
    for n, line in prose_lines(text):
        spans = list(CODE_SPAN.finditer(line))
        for m in spans:
            code = m.group(2).strip()
            if FULL_TREE and REPO_PATH.match(code) and not os.path.exists(os.path.join(ROOT, code)):
                problems.append("%s:%d: `%s` does not exist" % (where, n, code))
        # links inside code spans are text, not links
        bare = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in LINK.finditer(bare):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):     # http:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                problems.append("%s:%d: link to %s: no such file" % (where, n, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append("%s:%d: link to %s: no heading with that anchor" % (where, n, target))
    return problems


def main():
    problems = [p for page in pages() for p in check_page(page)]
    for p in problems:
        print(p)
    print("%d pages checked, %d problems" % (len(pages()), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
