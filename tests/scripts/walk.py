#!/usr/bin/env python3
"""The walk of a command: its static call graph inside the crate, approximated from the text.

Usage: python3 tests/scripts/walk.py <src dir> <command file, e.g. commands/remove.rs> [entry] [-v]

From the entry function (default `run`) of the command file, every call the crate's code makes
is followed: path-qualified calls (`crate::a::b::f(`, `super::f(`, `module::f(`, `Type::f(`,
`Self::f(`), bare calls resolved through the file's `use` lines and its own functions, and
method calls `.m(`: on what a crate call returned, or on a struct field, a parameter or a `let`
of a field whose crate type is declared (`ctx.cards.log(`, `cards: &Cards`), that type's method;
on `self`, the method of the impl the caller is in; else the one method of
that name in the caller's file; else the one method of that name in the crate, unless a std
type has one too (a fixed list). `pub use` re-exports are followed to the definition; test items
(`#[cfg(test)]`) and main.rs are left out. Trait dispatch and function values are not followed.
Same method on every tree, so before and after compare; absolute numbers are approximate.

Printed:
- files entered: distinct files holding a reached function;
- entries into each file of `state/`: distinct (caller, callee) call edges of the walk whose
  callee is in that file and whose caller is in another; re-entries = entries - 1 per file;
- calls back up, three readings (floors: FLOORS in the tree's own src/lib.rs, first = top):
  static: call edges whose callee's floor is above the caller's (the floors test keeps it 0,
  what remains is a method name taken for the wrong type);
  through closures handed down: call sites handing a closure to a function on a lower floor,
  which calls it back up;
  walked: the walk read depth-first in source order, each function once: the times the next
  function read sits on a higher floor than the one before (the reader climbs back up).
-v also lists every file with its entries, and the calls back up.
"""
import re
import sys
from collections import defaultdict
from pathlib import Path

STD_METHODS = set("""
new default clone to_owned to_string into from as_str as_ref as_path as_os_str len is_empty
iter iter_mut into_iter map map_err and_then or_else ok err unwrap unwrap_or unwrap_or_else
unwrap_or_default expect filter filter_map find any all collect push pop insert remove get
get_mut contains contains_key join display push_str extend sort sort_by sort_by_key dedup
retain first last starts_with ends_with split trim lines chars bytes parse write write_all
read flush exists is_dir is_file parent file_name extension to_path_buf canonicalize
metadata take skip zip rev count sum max min position then then_some is_some is_none
is_ok is_err as_deref as_mut as_bytes format fmt eq cmp partial_cmp hash kind message
context with_context lock wait kill id elapsed duration_since now load store fetch_add
entry or_insert or_default keys values drain truncate replace strip_prefix strip_suffix
send recv spawn next peek chain flatten flat_map cloned copied enumerate windows chunks
to_lowercase to_uppercase is_absolute components clear set_len sync_all
file_type permissions mode finish build arg args env current_dir output status code
success stdout stderr stdin read_to_string read_dir path try_into try_from borrow
borrow_mut deref as_slice to_vec split_once rsplit_once find_map last_mut trim_end trim_start
add any create copy display end env id kill next output peek poll run send skip status stdin
sync deserialize serialize
""".split())

KEYWORDS = set("""if while for match return loop fn let in as move ref mut unsafe async await
where impl dyn struct enum type const static use mod pub crate super self Self Some None Ok Err
Box Vec String Option Result""".split())


def strip(text):
    """Comments, strings and chars blanked (same length), so braces and calls are real code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def drop_tests(code):
    """Blank `#[cfg(test)]` items (their modules, functions, impls)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", code)
        if not m:
            return code
        brace = code.find("{", m.end())
        semi = code.find(";", m.end())
        end = semi if 0 <= semi < brace or brace < 0 else block_end(code, brace)
        code = code[:m.start()] + re.sub(r"[^\n]", " ", code[m.start():end + 1]) + code[end + 1:]


def split_use_tree(tree):
    """`a::{b, c::{d as e}}` into [(['a','b'], 'b'), (['a','c','d'], 'e')]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", tree))
    out = []

    def walk(prefix, t):
        if t.endswith("}") and "{" in t:
            head, inner = t.split("{", 1)
            inner = inner[:-1]
            head = [s for s in head.split("::") if s]
            depth, start = 0, 0
            parts = []
            for k, ch in enumerate(inner):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    parts.append(inner[start:k])
                    start = k + 1
            parts.append(inner[start:])
            for p in parts:
                if p:
                    walk(prefix + head, p)
            return
        alias = None
        if "@" in t:
            t, alias = t.split("@", 1)
        segs = prefix + [s for s in t.split("::") if s]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        if not segs:
            return
        out.append((segs, alias or segs[-1]))

    walk([], tree)
    return out


class Crate:
    def __init__(self, src):
        self.src = Path(src)
        self.mods = {}      # module path tuple -> file
        self.files = {}     # file -> module path tuple
        for f in sorted(self.src.rglob("*.rs")):
            rel = f.relative_to(self.src)
            if rel.parts[0] in ("main.rs", "bin"):
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            mod = tuple(["crate"] + parts)
            self.mods[mod] = f
            self.files[f] = mod
        self.callbacks = {}  # fn key -> callees handed a closure by it
        self.returns = {}   # fn key -> (type name it returns, wrapped in Result/Option)
        self.fns = {}       # (file, owner, name) -> (start, end) in code; owner '' or type
        self.code = {}
        self.uses = {}      # file -> {alias: segs (absolute)}
        self.globs = {}     # file -> [module segs]
        self.types = defaultdict(set)   # type name -> files defining it
        self.methods = defaultdict(set)  # method name -> fn keys (with self)
        self.impl_fns = defaultdict(set)  # (type name, fn name) -> fn keys
        self.fields = defaultdict(set)  # struct field name -> the crate types declared for it
        self.params = {}    # fn key -> its parameter list
        for f, mod in self.files.items():
            self.read(f, mod)
        self.floors = self.read_floors()

    def read_floors(self):
        lib = (self.src / "lib.rs").read_text()
        m = re.search(r"const FLOORS: &\[&\[&str\]\] = &\[(.*?)\n\];", lib, re.S)
        floors = {}
        for i, row in enumerate(re.findall(r"&\[([^\]]*)\]", m.group(1))):
            for name in re.findall(r'"(\w+)"', row):
                floors[name] = i
        return floors

    def floor(self, f):
        rel = f.relative_to(self.src)
        top = rel.parts[0].removesuffix(".rs")
        return self.floors.get(top)

    def absolute(self, mod, segs):
        """`use` path segments made absolute from module `mod`."""
        if segs[0] == "crate":
            return list(segs)
        if segs[0] == "self":
            return list(mod) + segs[1:]
        if segs[0] == "super":
            base = list(mod)
            while segs and segs[0] == "super":
                base = base[:-1]
                segs = segs[1:]
            return base + list(segs)
        if tuple(list(mod) + [segs[0]]) in self.mods:
            return list(mod) + list(segs)
        if tuple(["crate", segs[0]]) in self.mods and len(mod) == 1:
            return ["crate"] + list(segs)
        return None  # an external crate or std

    def read(self, f, mod):
        code = drop_tests(strip(f.read_text()))
        self.code[f] = code
        uses, globs = {}, []
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            for segs, alias in split_use_tree(m.group(1)):
                if segs[-1] == "*":
                    a = self.absolute(mod, segs[:-1])
                    if a:
                        globs.append(a)
                    continue
                a = self.absolute(mod, segs)
                if a:
                    uses[alias] = a
        self.uses[f] = uses
        self.globs[f] = globs
        for m in re.finditer(r"\b(?:struct|enum|trait|type)\s+([A-Z]\w*)", code):
            self.types[m.group(1)].add(f)
        # Struct fields and their types (`pub cards: crate::state::Cards,`), for a method
        # called on a field: `ctx.cards.log(`.
        for m in re.finditer(r"\bstruct\s+[A-Z]\w*[^{;(]*\{", code):
            block = code[m.end():block_end(code, m.end() - 1)]
            for fm in re.finditer(r"(?:^|[{,])\s*(?:pub(?:\([^)]*\))?\s+)?(\w+)\s*:\s*&?\s*(?:'\w+\s+)?((?:\w+::)*)([A-Z]\w*)", block):
                self.fields[fm.group(1)].add(fm.group(3))
        # impl blocks: the type they are for
        impls = []
        for m in re.finditer(r"\bimpl\b(?:\s*<[^{]*?>)?\s+([^{;]+?)\s*\{", code):
            head = m.group(1)
            head = re.sub(r"\bwhere\b.*", "", head, flags=re.S)
            target = head.split(" for ")[-1].strip()
            target = re.sub(r"<.*", "", target).split("::")[-1].strip("&' ")
            open_at = m.end() - 1
            impls.append((open_at, block_end(code, open_at), target))
        for m in re.finditer(r"\bfn\s+(\w+)\s*(<[^(]*>)?\s*\(", code):
            name = m.group(1)
            brace = code.find("{", m.end())
            semi = code.find(";", m.end())
            if brace < 0 or (0 <= semi < brace and "(" not in code[m.end():semi]):
                continue
            # the parameter list ends where its parentheses close
            depth, j = 1, m.end()
            while j < len(code) and depth:
                depth += {"(": 1, ")": -1}.get(code[j], 0)
                j += 1
            params = code[m.end():j]
            brace = code.find("{", j)
            semi = code.find(";", j)
            if 0 <= semi < brace:
                continue  # a declaration without a body (trait)
            end = block_end(code, brace)
            owner = ""
            for (a, b, t) in impls:
                if a < m.start() < b:
                    owner = t
            key = (f, owner, name)
            if key in self.fns:
                continue  # the first wins (cfg variants)
            self.fns[key] = (brace, end)
            self.params[key] = params
            # What it returns, when that is a type of the crate: `-> Self`, `-> Cards<'a>`,
            # `-> Result<Self>` (for a method called on what it returns).
            ret = re.search(r"->\s*(?:(?:anyhow::)?(Result|Option)\s*<\s*)?([A-Z]\w*)", code[j:brace])
            if ret:
                t = owner if ret.group(2) == "Self" else ret.group(2)
                self.returns[key] = (t, bool(ret.group(1)))
            if owner:
                self.impl_fns[(owner, name)].add(key)
                if re.match(r"\s*&?\s*(mut\s+)?self\b|\s*&'\w+\s+(mut\s+)?self\b|\s*mut\s+self\b", params):
                    self.methods[name].add(key)

    def module_item(self, segs, depth=0):
        """What the absolute path `segs` names: fn keys (possibly several)."""
        if depth > 8:
            return set()
        # The longest module prefix that leaves an item: `crate::verify::scan` is the function
        # `verify` re-exports, even beside a module of that name.
        for k in range(len(segs) - 1, 0, -1):
            mod = tuple(segs[:k])
            if mod in self.mods:
                rest = segs[k:]
                f = self.mods[mod]
                break
        else:
            return set()
        name = rest[0]
        if len(rest) == 1:
            if (f, "", name) in self.fns:
                return {(f, "", name)}
            if name in self.uses[f]:
                return self.module_item(self.uses[f][name], depth + 1)
            for g in self.globs[f]:
                r = self.module_item(g + [name], depth + 1)
                if r:
                    return r
            return set()
        # Type::f (or a re-exported type)
        typ, fn = name, rest[1]
        tfile = f
        if name in self.uses[f] and f not in self.types.get(name, ()):
            target = self.uses[f][name]
            typ = target[-1]
            r = self.module_item(target + [fn], depth + 1)
            if r:
                return r
        return self.type_fn(typ, fn, tfile)

    def type_fn(self, typ, fn, near=None):
        keys = self.impl_fns.get((typ, fn), set())
        if len(keys) > 1 and near:
            close = {k for k in keys if k[0] == near}
            if close:
                return close
        return set(keys)

    def calls(self, key):
        """The fn keys `key`'s body calls, in source order (with repeats removed)."""
        f, owner, _ = key
        mod = self.files[f]
        a, b = self.fns[key]
        body = self.code[f][a:b]
        found = []
        made = {}  # where a call's parentheses close -> the crate type it returns
        # Names whose crate type is known: parameters (`cards: &Cards`) and bindings of a
        # field (`let cards = &ctx.cards;`).
        typed = {}
        for pm in re.finditer(r"(\w+)\s*:\s*&?\s*(?:'\w+\s+)?(?:mut\s+)?(?:\w+::)*([A-Z]\w*)", self.params.get(key, "")):
            if pm.group(2) in self.types:
                typed[pm.group(1)] = pm.group(2)
        for lm in re.finditer(r"\blet\s+(?:mut\s+)?(\w+)\s*=\s*&?\s*[\w.]*\.(\w+)\s*;", body):
            if len(self.fields.get(lm.group(2), ())) == 1:
                typed[lm.group(1)] = next(iter(self.fields[lm.group(2)]))
        self.typed = typed
        self.callbacks.setdefault(key, [])
        for m in re.finditer(r"(\.\s*)?((?:[A-Za-z_]\w*\s*::\s*)*)([A-Za-z_]\w*)\s*(?:::\s*<[^()]*?>\s*)?\(", body):
            before = len(found)
            self.resolve(m, body, key, found, made)
            # A closure handed over: the callee calls it back.
            depth, j = 1, m.end()
            while j < len(body) and depth:
                depth += {"(": 1, ")": -1}.get(body[j], 0)
                j += 1
            args = body[m.end():j - 1]
            for k in found[before:]:
                if k in self.returns:
                    made[j - 1] = self.returns[k]
            if re.search(r"(^|[,(]\s*|\bmove\s*)\|", args) or re.search(r"\|\s*\|", args):
                for k in found[before:]:
                    self.callbacks[key].append(k)
        seen, out = set(), []
        for k in found:
            if k not in seen and k != key:
                seen.add(k)
                out.append(k)
        return out

    def resolve(self, m, body, key, found, made):
        """The fn keys the call matched by `m` in `body` (of `key`) may reach, added to `found`."""
        f, owner, _ = key
        mod = self.files[f]
        dot, path, name = m.group(1), m.group(2), m.group(3)
        start = m.start()
        if body[max(0, start - 1)] == "!" or body[m.end(3):m.end(3) + 1] == "!":
            return
        if dot:
            # A method on what a crate call just returned: `Cards::at(c).claim(x)`.
            receiver = re.search(r"\)(\?)?\s*$", body[max(0, start - 80):start])
            if receiver:
                close = start - len(receiver.group(0))
                typ, wrapped = made.get(close, (None, False))
                if typ and (wrapped == bool(receiver.group(1))):
                    own = self.type_fn(typ, name)
                    if own:
                        found += sorted(own)
                        return
            # A method on a struct field whose declared type is known (`ctx.cards.log(`), or on
            # a name whose type is (`cards.log(`, `cards` a parameter or a field bound).
            near = body[max(0, start - 80):start]
            field = re.search(r"\.\s*(\w+)\s*$", near)
            local = re.search(r"(?<![\w.])(\w+)\s*$", near)
            typ = None
            if field and len(self.fields.get(field.group(1), ())) == 1:
                typ = next(iter(self.fields[field.group(1)]))
            elif local and local.group(1) in self.typed and local.group(1) != "self":
                typ = self.typed[local.group(1)]
            if typ:
                own = self.type_fn(typ, name)
                if own:
                    found += sorted(own)
                    return
            if owner and re.search(r"\bself\s*$", body[:start]):
                own = self.type_fn(owner, name, f)
                if own:
                    found += sorted(own)
                    return
            local = {k for k in self.methods.get(name, set()) if k[0] == f}
            if len(local) == 1:
                found += sorted(local)
                return
            if name in STD_METHODS or name.startswith(("visit_", "next_")):
                return
            keys = self.methods.get(name, set())
            if len(keys) == 1:
                found.append(next(iter(keys)))
            return
        segs = [s.strip() for s in path.split("::") if s.strip()] + [name]
        if len(segs) == 1:
            if name in KEYWORDS or name[0].isupper():
                return
            if name in self.uses[f]:
                found += sorted(self.module_item(self.uses[f][name]))
            elif (f, "", name) in self.fns:
                found.append((f, "", name))
            elif owner and (f, owner, name) in self.fns:
                found.append((f, owner, name))
            else:
                for g in self.globs[f]:
                    r = self.module_item(g + [name])
                    if r:
                        found += sorted(r)
                        break
            return
        first = segs[0]
        if first == "Self" and owner:
            found += sorted(self.type_fn(owner, segs[-1], f))
            return
        if first in ("crate", "self", "super"):
            a_ = self.absolute(mod, segs)
            found += sorted(self.module_item(a_)) if a_ else []
            return
        if first in self.uses[f]:
            found += sorted(self.module_item(self.uses[f][first] + segs[1:]))
            return
        if tuple(list(mod) + [first]) in self.mods:
            found += sorted(self.module_item(list(mod) + segs))
            return
        if first[0].isupper() and f in self.types.get(first, ()) and len(segs) == 2:
            found += sorted(self.type_fn(first, segs[1], f))
            return


def walk(crate, command, entry="run"):
    f = crate.src / command
    start = (f, "", entry)
    assert start in crate.fns, f"no fn {entry} in {command}"
    order, edges, seen = [], set(), set()

    def visit(k):
        seen.add(k)
        order.append(k)
        for c in crate.calls(k):
            edges.add((k, c))
            if c not in seen:
                visit(c)

    sys.setrecursionlimit(10000)
    visit(start)
    rel = lambda k: str(k[0].relative_to(crate.src))
    files = sorted({rel(k) for k in order})
    entries = defaultdict(int)
    for a, b in edges:
        if a[0] != b[0]:
            entries[rel(b)] += 1
    back_static = [
        (a, b) for a, b in edges
        if crate.floor(a[0]) is not None and crate.floor(b[0]) is not None
        and crate.floor(b[0]) < crate.floor(a[0])
    ]
    handed = sorted({
        (a, b) for a in order for b in crate.callbacks.get(a, [])
        if crate.floor(a[0]) is not None and crate.floor(b[0]) is not None
        and crate.floor(b[0]) > crate.floor(a[0])
    }, key=lambda e: (rel(e[0]), e[0][2], rel(e[1]), e[1][2]))
    climbs = sum(
        1 for x, y in zip(order, order[1:])
        if crate.floor(x[0]) is not None and crate.floor(y[0]) is not None
        and crate.floor(y[0]) < crate.floor(x[0])
    )
    return {
        "functions": len(order),
        "edges": len(edges),
        "files": files,
        "entries": dict(entries),
        "back_static": back_static,
        "climbs": climbs,
        "handed": handed,
        "rel": rel,
    }


def main():
    src, command = sys.argv[1], sys.argv[2]
    rest = [a for a in sys.argv[3:] if not a.startswith("-")]
    entry = rest[0] if rest else "run"
    crate = Crate(src)
    w = walk(crate, command, entry)
    state = {k: v for k, v in w["entries"].items() if k.startswith("state/")}
    print(f"{command}: {w['functions']} functions, {w['edges']} call edges")
    print(f"  files entered: {len(w['files'])}")
    print(f"  entries into state/ files (re-entries = entries - 1 each): "
          + ", ".join(f"{k} {v}" for k, v in sorted(state.items())))
    print(f"  state/ total entries: {sum(state.values())}, "
          f"re-entries: {sum(max(v - 1, 0) for v in state.values())}")
    print(f"  calls back up: static {len(w['back_static'])}, through closures handed down "
          f"{len(w['handed'])}, walked {w['climbs']}")
    if "-v" in sys.argv:
        for fl in w["files"]:
            print("   ", fl, w["entries"].get(fl, 0))
        for a, b in sorted(w["back_static"], key=lambda e: (w["rel"](e[0]), e[0][2])):
            print(f"    up: {w['rel'](a)}::{a[2]} -> {w['rel'](b)}::{b[2]}")
        for a, b in w["handed"]:
            print(f"    handed: {w['rel'](a)}::{a[2]} -> {w['rel'](b)}::{b[2]} (calls back)")


if __name__ == "__main__":
    main()
