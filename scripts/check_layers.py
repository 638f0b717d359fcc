#!/usr/bin/env python3
"""The house's rules, checked over the code's own includes (docs/architecture.md).

Usage: scripts/check_layers.py [--table]

Reads scripts/layers.txt (a room per line: its floor, its folder, its purpose) and every
.h/.cc/.cu file outside tests/, benchmarks/, examples/ and build folders. Fails (exit 1),
naming each file and line, when
  - a file lies in no room;
  - a file includes a header of a room on a higher floor, or of another room on its own floor;
  - components (a header with its .cc/.cu) include each other in a cycle, in a room or across;
  - a file holds more than MAX_FILE_LINES lines, or a function (a .cc/.cu definition, from its
    opening brace to its closing one, lambdas inside included) more than MAX_FUNCTION_LINES.
  - docs/architecture.md does not hold the rooms' table as --table prints it (the doc drawn
    from the code: a room added, moved or re-floored shows there too).
--table prints that table.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
SKIP_TOP = {"tests", "benchmarks", "examples", "build", "out", ".git", "data", "docs", "scripts",
            "cmake", "reports/figures"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_rooms():
    rooms = []
    path = os.path.join(HERE, "layers.txt")
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or not parts[0].isdigit():
                sys.exit(f"{path}:{n}: expected 'FLOOR FOLDER PURPOSE'")
            rooms.append((int(parts[0]), parts[1].rstrip("/"), parts[2].strip()))
    return rooms


def room_of(path, rooms):
    """The room whose folder is the longest prefix of path ('.' holds only top-level files)."""
    best = None
    for floor, folder, _ in rooms:
        if folder == ".":
            if "/" not in path and (best is None):
                best = (floor, folder)
        elif path.startswith(folder + "/") and (best is None or len(folder) > len(best[1])):
            best = (floor, folder)
    return best


def sources():
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        rel = "" if rel == "." else rel
        dirnames[:] = sorted(d for d in dirnames
                             if os.path.join(rel, d) not in SKIP_TOP and not d.startswith("build")
                             and not d.startswith("."))
        for f in sorted(filenames):
            if re.search(r"\.(h|cc|cu)$", f):
                out.append(os.path.join(rel, f) if rel else f)
    return out


def strip_code(text):
    """text with comments, string and character literals blanked, line breaks kept."""
    text = re.sub(r'R"([^(\s]*)\((.*?)\)\1"', lambda m: '""' + "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def long_functions(text, limit):
    """(first line, lines, name) of each function body over `limit` lines. A brace opened where
    only namespaces, extern "C" blocks, classes and initialisers enclose it starts a function;
    class bodies are scopes whose member functions count one by one."""
    lines = strip_code(text).split("\n")
    stack, out = [], []
    for n, line in enumerate(lines, 1):
        for col, ch in enumerate(line):
            if ch == "{":
                if any(k == "fn" or isinstance(k, tuple) for k in stack):
                    stack.append("block")
                    continue
                head, k = line[:col], n - 1
                while k > 0 and not re.search(r"[;{}]\s*$", lines[k - 1]) and n - k < 8:
                    head = lines[k - 1] + " " + head
                    k -= 1
                if (re.search(r"\bnamespace\b[^;]*$", head) or re.search(r'extern\s*""\s*$', head)
                        or re.search(r"\b(struct|class|union|enum)\b[^()]*$", head) or re.search(r"=\s*$", head)):
                    stack.append("scope")
                else:
                    names = re.findall(r"([\w:~]+)\s*\(", head)
                    stack.append((n, names[0] if names else "?"))
            elif ch == "}" and stack:
                top = stack.pop()
                if isinstance(top, tuple) and n - top[0] + 1 > limit:
                    out.append((top[0], n - top[0] + 1, top[1]))
    return out


def component(path):
    return re.sub(r"\.(h|cc|cu)$", "", path)


def room_table(rooms):
    rows = ["| floor | room | what it holds |", "|---|---|---|"]
    for floor, folder, purpose in sorted(rooms, key=lambda r: (r[0], r[1])):
        rows.append(f"| {floor} | " + (f"`{folder}/`" if folder != "." else "top level") + f" | {purpose} |")
    return "\n".join(rows) + "\n"


def main():
    rooms = read_rooms()
    table = room_table(rooms)
    if "--table" in sys.argv[1:]:
        print(table, end="")
        return 0
    files = sources()
    known = set(files)
    errors = []
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        if table not in f.read():
            errors.append("docs/architecture.md: its table of rooms differs from scripts/layers.txt "
                          "(paste the output of scripts/check_layers.py --table)")
    edges = {}  # component -> {component: "file:line"}
    for path in files:
        mine = room_of(path, rooms)
        if mine is None:
            errors.append(f"{path}: in no room of scripts/layers.txt")
            continue
        with open(os.path.join(ROOT, path), errors="replace") as f:
            lines = f.readlines()
        if len(lines) > MAX_FILE_LINES:
            errors.append(f"{path}: {len(lines)} lines, over {MAX_FILE_LINES}: split it along a seam")
        if path.endswith((".cc", ".cu")):
            for first, count, name in long_functions("".join(lines), MAX_FUNCTION_LINES):
                errors.append(f"{path}:{first}: {name}: {count} lines, over {MAX_FUNCTION_LINES}: "
                              "give each step a function of its own")
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m or m.group(1) not in known:
                continue
            inc = m.group(1)
            theirs = room_of(inc, rooms)
            if theirs is None:
                continue  # reported for that file
            where = f"{path}:{n}"
            if theirs[1] != mine[1]:
                if theirs[0] > mine[0]:
                    errors.append(f"{where}: includes {inc}: room {theirs[1]}/ (floor {theirs[0]}) "
                                  f"is above {mine[1]}/ (floor {mine[0]})")
                elif theirs[0] == mine[0]:
                    errors.append(f"{where}: includes {inc}: rooms {theirs[1]}/ and {mine[1]}/ share "
                                  f"floor {mine[0]} and may not include each other")
            a, b = component(path), component(inc)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, where)
    # Cycles between components: a depth-first search, each cycle reported once.
    state, stack, seen_cycles = {}, [], set()

    def visit(c):
        state[c] = 1
        stack.append(c)
        for d in sorted(edges.get(c, {})):
            if state.get(d) == 1:
                cyc = stack[stack.index(d):]
                key = frozenset(cyc)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    hops = [f"{x} ({edges[x][y]})" for x, y in zip(cyc, cyc[1:] + [cyc[0]])]
                    errors.append("include cycle: " + " -> ".join(hops) + f" -> {cyc[0]}")
            elif state.get(d) is None:
                visit(d)
        stack.pop()
        state[c] = 2

    sys.setrecursionlimit(10000)
    for c in sorted(edges):
        if state.get(c) is None:
            visit(c)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} problem(s) in {len(files)} files", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files in {len(rooms)} rooms: no upward include, no cycle, "
          f"no file over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
