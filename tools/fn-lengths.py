#!/usr/bin/env python3
"""The longest Rust functions, per folder: STYLE.md's "functions under 150
lines" as a check.

    python3 tools/fn-lengths.py [--max N] [--top K] [ROOT…]

ROOTs default to the project's Rust folders (src, tools, python/src),
relative to the current directory (run it from the repository root);
folders named tests (integration tests) are skipped. For
each folder holding .rs files it prints the longest function (lines from
the `fn` line to its closing brace, signature included; doc comments and
attributes not counted; a nested fn counts inside its parent and on its
own), then the K longest overall. With --max it exits 1 naming every
function longer than N lines.

A small lexer skips comments, strings (raw and byte strings too) and char
literals, so braces inside them do not count; `fn` followed by `(` (a
function pointer type) is not a function, and a declaration ending in `;`
(a trait method without a body) has no length.
"""

import argparse
import os
import sys

DEFAULT_ROOTS = ["src", "tools", "python/src"]
# Integration tests (tests/, tools/tests/) are not counted: the limit is on
# the code, as STYLE.md states it; a test reads as one scenario top to bottom.
SKIP_DIRS = {"target", ".git", ".venv", "node_modules", "fixtures", "tests"}


def tokens(text):
    """Yields (kind, value, line) for identifiers and the punctuation
    `{ } ( ) [ ] ;`, skipping comments, strings and char literals."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c == '"' or (c in "rb" and _string_start(text, i)):
            i, line = _skip_string(text, i, line)
        elif c == "'":
            i = _skip_quote(text, i)
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            yield ("ident", text[i:j], line)
            i = j
        elif c in "{}()[];":
            yield ("punct", c, line)
            i += 1
        else:
            i += 1


def _string_start(text, i):
    """Whether a string literal (r"…", r#"…"#, b"…", br"…") starts at i."""
    if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return False
    j = i + 1 if text[i] == "b" else i
    if j < len(text) and text[j] == "r":
        j += 1
        while j < len(text) and text[j] == "#":
            j += 1
        return j < len(text) and text[j] == '"'
    return j < len(text) and j > i and text[j] == '"'


def _skip_string(text, i, line):
    """Skips the string literal at i; returns (end, line)."""
    if text[i] == "b":
        i += 1
    if text[i] == "r":
        i += 1
        hashes = 0
        while text[i] == "#":
            hashes, i = hashes + 1, i + 1
        close = '"' + "#" * hashes
        j = text.find(close, i + 1)
        j = len(text) if j < 0 else j
        return j + len(close), line + text.count("\n", i, j)
    i += 1  # the opening quote
    while i < len(text) and text[i] != '"':
        if text[i] == "\\":
            i += 1
        if i < len(text) and text[i] == "\n":
            line += 1
        i += 1
    return i + 1, line


def _skip_quote(text, i):
    """Skips a char literal ('a', '\\n', '\\u{..}') or a lifetime's quote."""
    if text.startswith("\\", i + 1):
        j = text.find("'", i + 3)
        return j + 1 if j >= 0 else len(text)
    if i + 2 < len(text) and text[i + 2] == "'":
        return i + 3
    return i + 1  # a lifetime ('a): the name lexes as an identifier


def functions(text):
    """(name, first line, last line) of every function with a body."""
    toks = list(tokens(text))
    found = []
    for k, (kind, value, line) in enumerate(toks):
        if kind != "ident" or value != "fn" or k + 1 >= len(toks):
            continue
        if toks[k + 1][0] != "ident":
            continue  # `fn(…)`: a function pointer type
        depth, j = 0, k + 2
        while j < len(toks):
            v = toks[j][1]
            if v in "([":
                depth += 1
            elif v in ")]":
                depth -= 1
            elif depth == 0 and v in "{;":
                break
            j += 1
        if j >= len(toks) or toks[j][1] == ";":
            continue
        braces = 0
        for m in range(j, len(toks)):
            v = toks[m][1]
            if v == "{":
                braces += 1
            elif v == "}":
                braces -= 1
                if braces == 0:
                    found.append((toks[k + 1][1], line, toks[m][2]))
                    break
    return found


def rust_files(root):
    if os.path.isfile(root):
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for f in sorted(filenames):
            if f.endswith(".rs"):
                yield os.path.join(dirpath, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", default=DEFAULT_ROOTS)
    ap.add_argument("--max", type=int, help="exit 1 if a function is longer")
    ap.add_argument("--top", type=int, default=10, help="the K longest overall")
    args = ap.parse_args()
    every = []
    for root in args.roots:
        for path in rust_files(root):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for name, first, last in functions(text):
                every.append((last - first + 1, path, first, name))
    per_folder = {}
    for entry in every:
        folder = os.path.dirname(entry[1])
        if entry > per_folder.get(folder, (0,)):
            per_folder[folder] = entry
    print("longest function per folder:")
    for folder in sorted(per_folder):
        n, path, first, name = per_folder[folder]
        print(f"  {n:5}  {folder}/  {name} ({path}:{first})")
    print(f"the {args.top} longest:")
    for n, path, first, name in sorted(every, reverse=True)[: args.top]:
        print(f"  {n:5}  {name} ({path}:{first})")
    if args.max is not None:
        over = [e for e in every if e[0] > args.max]
        if over:
            print(f"{len(over)} function(s) over {args.max} lines:", file=sys.stderr)
            for n, path, first, name in sorted(over, reverse=True):
                print(f"  {n:5}  {name} ({path}:{first})", file=sys.stderr)
            return 1
        print(f"no function over {args.max} lines ({len(every)} functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
