#!/usr/bin/env python3
"""Lists the longest functions and files of Swift sources, and checks them against limits.

A function's length is the lines from its declaration (`func`, `init`, `deinit`) to its closing
brace, both included; a nested function counts inside the one that holds it as well as on its
own. Strings and comments are skipped when braces are matched.

    scripts/function-lengths.py [--max-function N] [--max-file N] [--top N] PATH...

Exits 1 when a function or a file is over its limit (defaults: 80 and 500 lines), else 0.
Example: scripts/function-lengths.py Sources/MobilityDaemon
"""

import argparse
import os
import re
import sys

DECLARATION = re.compile(r"^\s*(?:@[\w()., ]+\s+)*(?:(?:package|public|private|fileprivate|internal|open|static|class|final|override|"
                         r"mutating|nonmutating|convenience|required|nonisolated|@inline\(__always\)|@discardableResult)\s+)*"
                         r"(func\s+[^\s(<]+|init[?!]?\s*[(<]|deinit\b)")


def code_only(lines):
    """The lines with string literals and comments blanked out (so braces in them do not count)."""
    out = []
    in_block_comment = 0
    in_multiline_string = False
    for line in lines:
        result = []
        i = 0
        in_string = False
        while i < len(line):
            c = line[i]
            if in_block_comment:
                if line.startswith("*/", i):
                    in_block_comment -= 1
                    i += 2
                elif line.startswith("/*", i):
                    in_block_comment += 1
                    i += 2
                else:
                    i += 1
                continue
            if in_multiline_string:
                if line.startswith('"""', i):
                    in_multiline_string = False
                    i += 3
                else:
                    i += 1
                continue
            if in_string:
                if c == "\\":
                    i += 2
                elif c == '"':
                    in_string = False
                    i += 1
                else:
                    i += 1
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block_comment += 1
                i += 2
                continue
            if line.startswith('"""', i):
                in_multiline_string = True
                i += 3
                continue
            if c == '"':
                in_string = True
                i += 1
                continue
            result.append(c)
            i += 1
        out.append("".join(result))
    return out


def functions(path):
    """(name, first line, length) of each function in a Swift file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    code = code_only(lines)
    found = []
    for start, line in enumerate(code):
        m = DECLARATION.match(line)
        if not m:
            continue
        name = re.sub(r"\s+", " ", m.group(1)).rstrip("(<").strip()
        # The body: from the first `{` after the declaration to its matching `}` (a protocol
        # requirement has none before the next declaration or the end of the type).
        depth = 0
        opened = False
        end = None
        for k in range(start, len(code)):
            if k > start and not opened and DECLARATION.match(code[k]):
                break
            for c in code[k]:
                if c == "{":
                    depth += 1
                    opened = True
                elif c == "}":
                    depth -= 1
                    if opened and depth == 0:
                        end = k
                        break
                    if depth < 0:  # the end of the enclosing type: no body
                        break
            if end is not None or depth < 0:
                break
        if end is not None:
            found.append((name, start + 1, end - start + 1))
    return found, len(lines) - (1 if lines and lines[-1] == "" else 0)


def swift_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, _, names in os.walk(p):
            for n in sorted(names):
                if n.endswith(".swift"):
                    yield os.path.join(root, n)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--max-function", type=int, default=80)
    parser.add_argument("--max-file", type=int, default=500)
    parser.add_argument("--top", type=int, default=10, help="how many of the longest functions and files to list")
    args = parser.parse_args()

    all_functions = []
    all_files = []
    for path in sorted(set(swift_files(args.paths))):
        fs, length = functions(path)
        all_files.append((length, path))
        all_functions += [(n, path, line, name) for name, line, n in fs]
    all_functions.sort(key=lambda f: (-f[0], f[1], f[2]))
    all_files.sort(key=lambda f: (-f[0], f[1]))

    print(f"longest functions (limit {args.max_function} lines):")
    for n, path, line, name in all_functions[: args.top]:
        print(f"  {n:5d}  {path}:{line}  {name}")
    print(f"longest files (limit {args.max_file} lines):")
    for n, path in all_files[: args.top]:
        print(f"  {n:5d}  {path}")

    over = [f for f in all_functions if f[0] > args.max_function]
    big = [f for f in all_files if f[0] > args.max_file]
    for n, path, line, name in over:
        print(f"{path}:{line}: error: {name} is {n} lines (limit {args.max_function})", file=sys.stderr)
    for n, path in big:
        print(f"{path}: error: {n} lines (limit {args.max_file})", file=sys.stderr)
    return 1 if over or big else 0


if __name__ == "__main__":
    sys.exit(main())
