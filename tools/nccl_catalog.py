#!/usr/bin/env python3
"""nccl_catalog.py -- catalog of NCCL `WARN(...)` format strings across releases.

Subcommands
-----------
  build        Scan every NCCL release tag (v2.X.Y-Z, X.Y.Z >= --since) of a
               bare/normal NCCL git repository and write a TSV table of every
               distinct WARN(...) format string to stdout (summary on stderr).
  instantiate  Read such a TSV and print one synthetic log line per row:
               id<TAB>subsystem<TAB>logline  (used by coverage tests).

Usage
-----
  python3 tools/nccl_catalog.py build [--repo DIR] [--since 2.4.2] > docs/catalog/nccl_warn.tsv
  python3 tools/nccl_catalog.py instantiate docs/catalog/nccl_warn.tsv

Only the format strings (data) and file names are extracted; no NCCL source
code is copied.  Python 3 standard library only.
"""

import argparse
import hashlib
import re
import subprocess
import sys
import time

# ---------------------------------------------------------------------------
# SUBSYSTEM MAPPING -- the single source of truth (the engine mirrors it).
#
# Each rule is (regex, subsystem).  The regex is matched with re.search()
# against the file path relative to src/ (e.g. "transport/net_ib.cc",
# "misc/socket.cc", "include/checks.h").  Rules are tried in order; the FIRST
# match wins; a path matching nothing is "misc".
#
#   (^|/)X   = a path component starting with X
#   X$ / X\. = anchored on the basename
# ---------------------------------------------------------------------------
SUBSYSTEM_RULES = [
    # regex                                                        subsystem     examples
    (r"(^|/)(net_ib|ibvwrap|ibvsymbols|ibvcore|ib|mlx5dv)",        "ib"),        # transport/net_ib.cc, transport/net_ib/*, misc/ibvwrap.cc, include/ibvwrap.h, misc/mlx5dvwrap.cc
    (r"(^|/|_)(net_socket|socket|ipcsocket)",                      "socket"),    # transport/net_socket.cc, misc/socket.cc, include/socket.h, misc/ipcsocket.cc, os/linux_ipcsocket.cc
    (r"(^|/)bootstrap",                                            "bootstrap"), # bootstrap.cc (bootstrap.cu before 2.4.6)
    (r"(^|/)shm",                                                  "shm"),       # transport/shm.cc, include/shm.h, misc/shmutils.cc
    (r"(^|/)p2p",                                                  "p2p"),       # transport/p2p.cc
    (r"(^|/)(cudawrap|alloc|checks\.h$|cuda|core\.h$)",            "cuda"),      # misc/cudawrap.cc, include/alloc.h, include/checks.h, allocator.cc, include/core.h (held the CUDA/SYS checks in 2.4.2)
    (r"(^|/)proxy[^/]*$",                                          "proxy"),     # proxy.cc
    (r"(^|/)init",                                                 "init"),      # init.cc
    (r"(^|/)nvls",                                                 "nvls"),      # transport/nvls.cc
    (r"(^|/)profiler",                                             "profiler"),  # plugin/profiler.cc, misc/profiler.cc
    (r"(^|/)coll_?net",                                            "collnet"),   # transport/coll_net.cc
    (r"(^|/)(graph/|topo|xml|search|paths|tuning|rings|trees)",    "topology"),  # graph/*, misc/topo.cc, misc/rings.cc (2.4.x)
    (r"(^|/)ras/",                                                 "ras"),       # ras/ras.cc, ras/client_support.cc
    (r"(^|/)(net\.c|plugin/|net_v)",                               "plugin"),    # plugin/net.cc (net.cc before 2.24), transport/net.cc, plugin/tuner.cc, plugin/gin.cc
    (r"(^|/)(enqueue|group|collectives|argcheck|checks\.cu$)",     "enqueue"),   # enqueue.cc, group.cc, misc/argcheck.cc (misc/checks.cu in 2.4.x)
    (r"(^|/)register",                                             "register"),  # register/register.cc
    (r"(^|/)(param|env)",                                          "env"),       # misc/param.cc, param/param_registry.cc, include/param/*
]
DEFAULT_SUBSYSTEM = "misc"
_SUBSYSTEM_RULES_RE = [(re.compile(p), s) for p, s in SUBSYSTEM_RULES]


def subsystem_of(path):
    for rx, sub in _SUBSYSTEM_RULES_RE:
        if rx.search(path):
            return sub
    return DEFAULT_SUBSYSTEM


# ---------------------------------------------------------------------------
# Source selection
# ---------------------------------------------------------------------------
SOURCE_EXTS = (".cc", ".c", ".h", ".cu", ".cuh", ".hpp", ".cpp")
TEST_DIR_RE = re.compile(r"(^|/)(tests?|unittests?|gtest)(/|$)")
TAG_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-(\d+)$")

# printf length macros from <inttypes.h> -> their printf meaning on LP64 Linux
INTTYPES = {}
for _n, _l in (("8", "hh"), ("16", "h"), ("32", ""), ("64", "l"),
               ("PTR", "l"), ("MAX", "l")):
    for _c in "diouxX":
        INTTYPES["PRI%s%s" % (_c, _n)] = _l + _c
        INTTYPES["PRI%sLEAST%s" % (_c, _n)] = _l + _c
        INTTYPES["PRI%sFAST%s" % (_c, _n)] = _l + _c


def want_path(path):
    """path is relative to repo root."""
    if not path.startswith("src/") or not path.endswith(SOURCE_EXTS):
        return False
    return not TEST_DIR_RE.search(path[4:])


# ---------------------------------------------------------------------------
# C tokenizer (just enough to find WARN( calls and their first argument)
# ---------------------------------------------------------------------------
TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\\\r?\n)                             # blanks, line continuation
  | (?P<nl>\n)
  | (?P<lc>//[^\n]*)                                         # // comment
  | (?P<bc>/\*.*?(?:\*/|\Z))                                 # /* comment */
  | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^ ()\\\t\n]{0,16})\((?P<rawbody>.*?)\)(?P=delim)")
  | (?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\(?:.|\n))*"?)          # "string"
  | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*'?)               # 'c'
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[\w.]|[eEpP][+-])*)
  | (?P<hash>\#\#?)
  | (?P<punct>.)
""", re.S | re.X)

SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?", "e": "\x1b",
              "\n": ""}


def c_unescape(body):
    out, i, n = [], 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        d = body[i + 1]
        if d in SIMPLE_ESC:
            out.append(SIMPLE_ESC[d])
            i += 2
        elif d == "x":
            m = re.match(r"[0-9A-Fa-f]+", body[i + 2:])
            out.append(chr(int(m.group(0), 16) & 0xFF) if m else "x")
            i += 2 + (len(m.group(0)) if m else 0)
        elif d in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        else:
            out.append(d)
            i += 2
    return "".join(out)


def tokenize(text):
    """Yield (kind, value, line) skipping blanks/comments; 'nl' tokens kept
    so preprocessor directives can be recognised."""
    line = 1
    for m in TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind in ("delim", "rawbody"):
            kind = "raw"
        val = m.group(0)
        if kind == "nl":
            yield ("nl", val, line)
        elif kind not in ("ws", "lc", "bc"):
            yield (kind, val, line)
        line += val.count("\n")


def string_body(kind, val):
    if kind == "raw":
        m = re.match(r'(?:u8|[uUL])?R"([^(]*)\((.*)\)\1"$', val, re.S)
        return m.group(2) if m else ""
    q = val.index('"')
    body = val[q + 1:]
    if body.endswith('"'):
        body = body[:-1]
    return c_unescape(body)


def extract_warns(text):
    """Return (calls, nonliteral) where calls is a list of dicts
    {format, nowarn, macros, line} and nonliteral the number of WARN( calls
    whose first argument is not made of string literals."""
    toks = [t for t in tokenize(text)]
    calls, nonliteral = [], 0
    paren_owner = []          # identifier owning each open '(' (or None)
    line_start = True         # at start of a logical line (for '#define')
    directive = None          # name of current preprocessor directive
    i, n = 0, len(toks)
    while i < n:
        kind, val, line = toks[i]
        if kind == "nl":
            line_start = True
            directive = None
            i += 1
            continue
        if line_start and kind == "hash":
            if i + 1 < n and toks[i + 1][0] == "id":
                directive = toks[i + 1][1]
            line_start = False
            i += 2
            continue
        line_start = False
        if kind == "punct":
            if val == "(":
                prev = toks[i - 1] if i > 0 else None
                paren_owner.append(prev[1] if prev and prev[0] == "id" else None)
            elif val == ")" and paren_owner:
                paren_owner.pop()
            i += 1
            continue
        if kind == "id" and val == "WARN" and i + 1 < n and toks[i + 1][1] == "(":
            # '#define WARN(...)' is the macro definition, not a call
            if directive == "define" and i >= 1 and toks[i - 1][1] == "define":
                i += 1
                continue
            prev = toks[i - 1][1] if i > 0 else ""
            if prev in (".", "->", "::"):
                i += 1
                continue
            # first argument: tokens up to top-level ',' or ')'
            j, depth, arg = i + 2, 0, []
            while j < n:
                k2, v2, _ = toks[j]
                if k2 == "nl":
                    j += 1
                    continue
                if k2 == "punct" and v2 in "([{":
                    depth += 1
                elif k2 == "punct" and v2 in ")]}":
                    if depth == 0:
                        break
                    depth -= 1
                elif k2 == "punct" and v2 == "," and depth == 0:
                    break
                arg.append((k2, v2))
                j += 1
            fmt = parse_format_arg(arg)
            if fmt is None:
                nonliteral += 1
            else:
                text_fmt, macros = fmt
                nowarn = any(o and o.endswith("NOWARN") for o in paren_owner)
                calls.append({"format": text_fmt, "nowarn": nowarn,
                              "macros": macros, "line": line})
            # continue scanning inside the call (to keep paren balance)
            paren_owner.append("WARN")
            i += 2
            continue
        i += 1
    return calls, nonliteral


def parse_format_arg(arg):
    """arg: list of (kind, value).  Accept adjacent string literals with
    macro identifiers (or '#param' stringification) between them."""
    if not any(k in ("str", "raw") for k, _ in arg):
        return None
    parts, macros, k = [], [], 0
    while k < len(arg):
        kind, val = arg[k]
        if kind in ("str", "raw"):
            parts.append(string_body(kind, val))
        elif kind == "id":
            if val in INTTYPES:
                parts.append(INTTYPES[val])
            else:
                parts.append("%s")
                macros.append(val)
        elif kind == "hash" and val == "#" and k + 1 < len(arg) and arg[k + 1][0] == "id":
            parts.append("%s")
            macros.append("#" + arg[k + 1][1])
            k += 1
        else:
            return None
        k += 1
    return "".join(parts), macros


# ---------------------------------------------------------------------------
# git access
# ---------------------------------------------------------------------------
def git(repo, *args):
    return subprocess.run(["git", "--git-dir=" + repo] + list(args),
                          check=True, stdout=subprocess.PIPE).stdout


def version_of(tag):
    m = TAG_RE.match(tag)
    return tuple(int(x) for x in m.groups()) if m else None


def vstr(tag):
    """v2.18.3-1 -> 2.18.3"""
    return ".".join(str(x) for x in version_of(tag)[:3])


def parse_since(s):
    return tuple(int(x) for x in s.lstrip("v").split("-")[0].split("."))


def list_tags(repo, since):
    tags = []
    for t in git(repo, "tag", "--list", "v2.*").decode().split():
        v = version_of(t)
        if v and v[0] == 2 and v[:3] >= since:
            tags.append(t)
    tags.sort(key=version_of)
    return tags


def read_blobs(repo, oids):
    """Read many blobs with a single `git cat-file --batch`."""
    out = {}
    if not oids:
        return out
    p = subprocess.Popen(["git", "--git-dir=" + repo, "cat-file", "--batch"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    data, _ = p.communicate(("\n".join(oids) + "\n").encode())
    pos = 0
    for oid in oids:
        nl = data.index(b"\n", pos)
        hdr = data[pos:nl].split()
        pos = nl + 1
        if len(hdr) < 3 or hdr[1] == b"missing":
            continue
        size = int(hdr[2])
        out[oid] = data[pos:pos + size]
        pos += size + 1
    return out


# ---------------------------------------------------------------------------
# rename tracking: map every path to the path it has in the newest tag
# ---------------------------------------------------------------------------
def stem_of(path):
    base = path.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0]


def canonical_paths(tags, trees):
    """trees[tag] = {path: oid}.  A path P whose last tag is L is considered
    renamed to Q when Q first appears in the tag right after L and Q is the
    only such new path with the same stem (basename without extension).
    Handles foo.cu -> foo.cc, misc/group.cc -> group.cc, net.cc -> plugin/net.cc."""
    last_idx, first_idx = {}, {}
    for i, t in enumerate(tags):
        for p in trees[t]:
            last_idx[p] = i
            first_idx.setdefault(p, i)
    nxt = {}
    for p, li in last_idx.items():
        if li + 1 >= len(tags):
            continue
        cands = [q for q in trees[tags[li + 1]]
                 if first_idx[q] == li + 1 and stem_of(q) == stem_of(p)]
        if len(cands) > 1:   # e.g. misc/topo.cc -> graph/topo.cc + graph/topo.h
            base = p.rsplit("/", 1)[-1]
            cands = [q for q in cands if q.rsplit("/", 1)[-1] == base]
        if len(cands) == 1:
            nxt[p] = cands[0]
    canon = {}
    for p in last_idx:
        q, seen = p, set()
        while q in nxt and q not in seen:
            seen.add(q)
            q = nxt[q]
        canon[p] = q
    return canon


# ---------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------
def esc_field(s):
    return (s.replace("\\", "\\\\").replace("\t", "\\t")
             .replace("\n", "\\n").replace("\r", "\\r"))


def unesc_field(s):
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), s)


def row_id(file, fmt):
    return hashlib.sha1((file + "\t" + fmt).encode("utf-8")).hexdigest()[:10]


def cmd_build(args):
    t0 = time.time()
    repo = args.repo
    tags = list_tags(repo, parse_since(args.since))
    if not tags:
        sys.exit("no release tags found in %s" % repo)
    trees = {}
    for t in tags:
        tree = {}
        for ln in git(repo, "ls-tree", "-r", "--full-tree", t, "--", "src").decode("utf-8", "replace").splitlines():
            meta, path = ln.split("\t", 1)
            mode, typ, oid = meta.split()
            if typ == "blob" and want_path(path):
                tree[path[4:]] = oid
        trees[t] = tree
    oids = sorted({o for tr in trees.values() for o in tr.values()})
    blobs = read_blobs(repo, oids)

    parsed = {}      # oid -> (calls, nonliteral)
    for oid, data in blobs.items():
        if b"WARN" not in data:
            continue
        parsed[oid] = extract_warns(data.decode("utf-8", "replace"))

    canon = canonical_paths(tags, trees)
    rows = {}        # (file, fmt) -> dict
    nonlit_sites = set()   # (path, oid)
    macros_seen = {}
    for ti, t in enumerate(tags):
        for path, oid in trees[t].items():
            if oid not in parsed:
                continue
            calls, nonlit = parsed[oid]
            if nonlit:
                nonlit_sites.add((path, oid, nonlit))
            f = canon[path]
            for c in calls:
                key = (f, c["format"])
                r = rows.get(key)
                if r is None:
                    r = rows[key] = {"first": ti, "last": ti, "nowarn": c["nowarn"]}
                r["first"] = min(r["first"], ti)
                r["last"] = max(r["last"], ti)
                r["nowarn"] = r["nowarn"] or c["nowarn"]
                for mac in c["macros"]:
                    macros_seen.setdefault(mac, set()).add(f)

    out = sys.stdout
    out.write("id\tsubsystem\tfile\tfirst\tlast\tnowarn\tformat\n")
    items = sorted(rows.items(), key=lambda kv: (subsystem_of(kv[0][0]), kv[0][0], kv[0][1]))
    for (f, fmt), r in items:
        out.write("\t".join([row_id(f, fmt), subsystem_of(f), f, vstr(tags[r["first"]]),
                             vstr(tags[r["last"]]), "1" if r["nowarn"] else "0",
                             esc_field(fmt)]) + "\n")
    n_nonlit = sum(n for _, _, n in nonlit_sites)
    out.write("# generated by tools/nccl_catalog.py from %d tags %s..%s; "
              "%d WARN( call sites (summed over distinct file versions) with a "
              "non-literal format were skipped\n" % (len(tags), tags[0], tags[-1], n_nonlit))

    # ---- summary on stderr
    err = sys.stderr
    err.write("tags read: %d (%s .. %s), distinct blobs: %d, blobs with WARN: %d\n"
              % (len(tags), tags[0], tags[-1], len(oids), len(parsed)))
    err.write("distinct (file, format) rows: %d\n" % len(rows))
    err.write("distinct formats (ignoring file): %d\n" % len({k[1] for k in rows}))
    per = {}
    for (f, _), _r in rows.items():
        per[subsystem_of(f)] = per.get(subsystem_of(f), 0) + 1
    err.write("per subsystem: " + ", ".join("%s=%d" % kv for kv in sorted(per.items())) + "\n")
    err.write("non-literal WARN( first args skipped: %d (in %d file versions)\n"
              % (n_nonlit, len(nonlit_sites)))
    if macros_seen:
        err.write("macros between literals (-> %s): " + ", ".join(
            "%s[%s]" % (m, ",".join(sorted(fs))) for m, fs in sorted(macros_seen.items())) + "\n")
    renamed = sorted((p, q) for p, q in canon.items() if p != q and any(
        trees[t].get(p) in parsed for t in tags))
    if renamed:
        err.write("renames followed: " + ", ".join("%s->%s" % pq for pq in renamed) + "\n")
    newest = len(tags) - 1
    new = [(f, fmt) for (f, fmt), r in items if r["first"] == newest]
    err.write("new in newest tag %s: %d\n" % (tags[-1], len(new)))
    for f, fmt in new:
        err.write("  + %s: %s\n" % (f, esc_field(fmt)))
    gone = [(f, fmt) for (f, fmt), r in items if r["last"] == newest - 1]
    err.write("removed in newest tag (last seen in %s): %d\n" % (tags[newest - 1] if newest else "-", len(gone)))
    for f, fmt in gone:
        err.write("  - %s: %s\n" % (f, esc_field(fmt)))
    err.write("build took %.1fs\n" % (time.time() - t0))


# ---------------------------------------------------------------------------
# instantiate
# ---------------------------------------------------------------------------
CONV_RE = re.compile(r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                     r"(?P<len>hh|h|ll|l|j|z|t|L|q|I64|I32)?(?P<conv>[diouxXeEfFgGaAcspnm%])")

HOST_HDR = "gpu-node-07:48213:48290 [3]"
TIMESTAMP = "[2025-05-02 14:03:11] "
FUNC_NAME = "ncclFunc"


def render_message(fmt):
    ints = [2]

    def sub(m):
        conv, flags = m.group("conv"), m.group("flags").replace("'", "")
        width = m.group("width") if m.group("width") not in (None, "*") else ""
        prec = m.group("prec")
        prec = "" if prec is None or prec == "*" else "." + prec
        if conv == "%":
            return "%"
        if conv == "n":
            return ""
        if conv == "m":          # glibc: strerror(errno), takes no argument
            return "Connection refused"
        if conv in "di":
            v, c = ints[0], "d"
            ints[0] += 1
        elif conv in "uo":
            v, c = ints[0], conv
            ints[0] += 1
        elif conv in "xX":
            v, c = 0x1b000, conv
        elif conv in "eEfFgG":
            v, c = 1.5, conv
        elif conv in "aA":
            return ("0x1.8p+0" if conv == "a" else "0X1.8P+0").rjust(int(width or 0))
        elif conv == "c":
            v, c, prec = "x", "s", ""
        elif conv == "p":
            v, c, prec = "0x7f3a2c000000", "s", ""
        else:  # s
            v, c = "mlx5_0", "s"
        return ("%" + flags + width + prec + c) % v

    return CONV_RE.sub(sub, fmt)


def message_line(fmt):
    msg = fmt
    while msg.startswith("\n"):
        msg = msg[1:]
    if "\n" in msg:
        head, rest = msg.split("\n", 1)
        msg = head if head.strip() else rest.split("\n", 1)[0]
    return render_message(msg).rstrip("\r")


def read_catalog(path):
    rows = []
    with open(path, encoding="utf-8") as fh:
        header = None
        for ln in fh:
            ln = ln.rstrip("\n")
            if not ln or ln.startswith("#"):
                continue
            cols = ln.split("\t")
            if header is None:
                header = cols
                continue
            r = dict(zip(header, cols))
            r["format"] = unesc_field(r["format"])
            rows.append(r)
    return rows


# WARN call sites that NCCL prints on healthy runs: benign context, held to no
# floor (the coverage test's "expect: context" rows). Each is documented where
# its rule is.
BENIGN_WARNS = {
    # misc/ibvwrap.cc 2.4-2.10 "Failed to open libibverbs.so[.1]": every host without
    # rdma-core, healthy or not (rules/net.yaml NCCL-IBVERBS-MISSING-WARN).
    "507f8282f9",
}


def cmd_instantiate(args):
    rows = read_catalog(args.tsv)
    ts_counter = 0
    out = sys.stdout
    out.write("id\tsubsystem\tlogline\texpect\n")
    for r in rows:
        ver = parse_since(r["last"])
        msg = message_line(r["format"])
        line_no = 100 + int(r["id"][:6], 16) % 1900
        if r["nowarn"] == "1":
            sub = "info-" + r["subsystem"]
            body = "%s NCCL INFO %s" % (HOST_HDR, msg)
        else:
            sub = r["subsystem"]
            if ver >= (2, 30):
                body = "%s %s:%d (%s) NCCL WARN %s" % (HOST_HDR, r["file"], line_no, FUNC_NAME, msg)
            else:
                body = "%s %s:%d NCCL WARN %s" % (HOST_HDR, r["file"], line_no, msg)
        if ver >= (2, 26):
            if ts_counter % 2 == 1:
                body = TIMESTAMP + body
            ts_counter += 1
        out.write("%s\t%s\t%s\t%s\n" % (r["id"], sub, body, "context" if r["id"] in BENIGN_WARNS else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sp = ap.add_subparsers(dest="cmd")
    b = sp.add_parser("build", help="scan NCCL tags, write TSV to stdout")
    b.add_argument("--repo", default="/work/.mirror/NVIDIA+nccl/repo",
                   help="NCCL git directory (bare or .git)")
    b.add_argument("--since", default="2.4.2", help="oldest release to include (default 2.4.2)")
    i = sp.add_parser("instantiate", help="print a synthetic log line per catalog row")
    i.add_argument("tsv")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        try:
            cmd_build(args)
        except (subprocess.CalledProcessError, FileNotFoundError) as e:
            sys.exit("nccl_catalog: git failed on %s: %s" % (args.repo, e))
    elif args.cmd == "instantiate":
        cmd_instantiate(args)
    else:
        ap.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
