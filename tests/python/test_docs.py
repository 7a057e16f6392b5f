"""The guides' code runs and their links hold: every ```python block of a
guide page, run in order as one program (in a file: kernels need their
source), passes its own asserts against NumPy; docs/check_links.py finds no
broken link, anchor or repository path, and does find broken ones."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
GUIDES = ["coming_from.md", "threads.md", "index.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def load_checker():
    spec = importlib.util.spec_from_file_location("check_links", os.path.join(DOCS, "check_links.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("page", GUIDES)
def test_guide_code_runs(page, tmp_path):
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        blocks = BLOCK.findall(f.read())
    assert blocks, "no python blocks in %s" % page
    script = tmp_path / (page[:-3] + "_blocks.py")
    script.write_text("\n\n".join(blocks))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, "%s's code failed:\n%s%s" % (page, r.stdout, r.stderr)


def test_links_and_paths_hold(capsys):
    assert load_checker().main() == 0, capsys.readouterr().out


def test_checker_finds_broken_links(tmp_path):
    checker = load_checker()
    (tmp_path / "other.md").write_text("# A heading, with `code`\n\ntext\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n"
                    "[fine](other.md#a-heading-with-code) [fine](#page) `[not a link](x.md)`\n"
                    "[gone](missing.md) [bad anchor](other.md#nothing-here) [self](#nor-here)\n"
                    "```\n[in a fence](fenced.md)\n```\n"
                    "`src/no/such_file.c` `docs/check_links.py`\n")
    problems = checker.check_page(str(page))
    text = "\n".join(problems)
    assert "missing.md: no such file" in text
    assert "other.md#nothing-here: no heading" in text
    assert "#nor-here: no heading" in text
    assert "x.md" not in text and "fenced.md" not in text and "a-heading-with-code" not in text
    paths = [p for p in problems if "does not exist" in p]
    if checker.FULL_TREE:
        assert len(paths) == 1 and "src/no/such_file.c" in paths[0], problems
    assert len(problems) == 3 + len(paths), problems


def test_readme_starts_with_a_kernel_that_prints_what_it_says(tmp_path):
    """The README's first screen shows a kernel: its first python block
    starts within the first 40 lines, runs, and prints what its comments
    promise (the `# value` after each print)."""
    readme = os.path.join(DOCS, "..", "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    first = BLOCK.search(text)
    assert first and text[:first.start()].count("\n") < 40, "no python block in README's first 40 lines"
    code = first.group(1)
    promised = [line.split("#")[-1].strip() for line in code.splitlines()
                if line.startswith("print(") and "#" in line]
    assert promised, code
    script = tmp_path / "readme_first.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:len(promised)] == promised, (r.stdout, promised)
