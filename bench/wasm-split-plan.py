#!/usr/bin/env python3
# What moving rarely used endpoint families into a second wasm module would save, measured on the
# shipped build: bytes of code (and data segments) that only a family's entry points reach (from
# `twiggy dominators`), and the gzip -9 bytes the main module loses without them (the whole
# module's code and data gzipped with and without them, in module order).
#   twiggy dominators MODULE -d 200 -r 100000 > dom.txt
#   python3 bench/wasm-split-plan.py MODULE dom.txt
# MODULE must keep its name section: `wasm-opt -Os -g` of wasm-bindgen's output (see
# bench/RESULTS.md, "The browser host: where the time goes").
import re, sys, zlib, collections

data = open(sys.argv[1], 'rb').read()
def leb(b, i):
    r = s = 0
    while True:
        x = b[i]; i += 1; r |= (x & 0x7f) << s; s += 7
        if x < 0x80: return r, i
i = 8; imports = 0; bodies = []; segs = []; fnames = {}; dnames = {}
while i < len(data):
    sid = data[i]; i += 1; size, i = leb(data, i); end = i + size
    if sid == 2:
        n, j = leb(data, i)
        for _ in range(n):
            l, j = leb(data, j); j += l; l, j = leb(data, j); j += l; k = data[j]; j += 1
            if k == 0: _, j = leb(data, j); imports += 1
            elif k == 1: j += 1; f, j = leb(data, j); _, j = leb(data, j)
            elif k == 2: f, j = leb(data, j); _, j = leb(data, j)
            elif k == 3: j += 2
    elif sid == 10:
        n, j = leb(data, i)
        for _ in range(n):
            l, j = leb(data, j); bodies.append(data[j:j + l]); j += l
    elif sid == 11:
        n, j = leb(data, i)
        for _ in range(n):
            flag, j = leb(data, j)
            if flag == 2: _, j = leb(data, j)
            if flag in (0, 2):
                while data[j] != 0x0b: j += 1  # const expr (i32.const N)
                j += 1
            l, j = leb(data, j); segs.append(data[j:j + l]); j += l
    elif sid == 0:
        l, j = leb(data, i); nm = data[j:j + l].decode(); j += l
        if nm == 'name':
            while j < end:
                sub = data[j]; j += 1; sl, j = leb(data, j); se = j + sl
                if sub in (1, 9):
                    n, k = leb(data, j)
                    for _ in range(n):
                        idx, k = leb(data, k); l, k = leb(data, k)
                        (fnames if sub == 1 else dnames)[data[k:k + l].decode('utf8', 'replace')] = idx; k += l
                j = se
    i = end

# item name -> bytes
def item(name):
    if name in fnames and fnames[name] >= imports: return ('f', fnames[name] - imports)
    if name.startswith('data segment "'):
        d = name[len('data segment "'):-1]
        if d in dnames: return ('d', dnames[d])
    return None

# rows of the dominator tree: (depth, retained, name)
rows = []
for line in open(sys.argv[2]):
    m = re.match(r'\s*(\d+) ┊\s*[\d.]+% ┊ (\s*)⤷ (.*)', line.rstrip('\n'))
    if m: rows.append((len(m.group(2)), int(m.group(1)), m.group(3)))
top = min(d for d, _, _ in rows if d > 2)  # the children of elem[0]

# Families to load on first use: a name pattern each (an entry point's path in the engine).
FAMILIES = [
    ('@replace (search and replace)', r'engine::api::replace::'),
    ('@aliases', r'engine::api::aliases::|engine::content::aliases::'),
    ('@types editing, dexterity types', r'engine::api::types::(put|patch|post|delete|add)|engine::api::dexterity_types::'),
    ('users, groups, user schema', r'engine::api::(users|groups|userschema|principals)::|engine::people::accounts::'),
    ('@openapi', r'engine::api::openapi::'),
    ('sharing, security panels', r'engine::api::(sharing|securitypanels)::'),
    ('content rules, automation', r'engine::api::(content_rules|rules_controlpanel)::|engine::automation::rules::'),
    ('jobs, cron', r'engine::api::jobs::|engine::automation::jobs::'),
    ('control panels, configuration', r'engine::api::(controlpanels|configuration|addons|system|upgrade|health)::'),
    ('calendar', r'engine::api::calendar::|engine::content::calendar::'),
    ('relations, link integrity', r'engine::api::(relations|linkintegrity)::|engine::content::relations::'),
    ('transactions, history, changes', r'engine::api::(transactions|history|changes|change_stream)::'),
    ('translations, multilingual', r'engine::api::translations::|engine::content::multilingual::'),
    ('forms, email', r'engine::api::(forms|email)::|engine::automation::(forms|mail)::'),
    ('tus uploads', r'engine::api::tus::'),
    ('export (RSS, ...)', r'engine::api::export::'),
    ('AI endpoints', r'engine::api::ai::|engine::ai::'),
    ('replica sync (host_wasm::replica)', r'host_wasm::replica::|engine::sync::'),
    ('stemmers', r'rust_stemmers::'),
    ('outbound URL policy (webhooks)', r'engine::core::net::'),
]
# A further step, measured apart (not in "all of them"): every write of content in the second
# module too, leaving a first module that only reads (GET of content, listings, search).
WRITES = ('writes of content (POST/PATCH/DELETE, workflow, copy/move, locking, files)',
          r'engine::api::(copymove|locking)::|engine::api::(content|workflow|files|file_fields|recyclebin|comments)::(post|patch|delete|put|add|create|update|transition|upload|restore|purge|remove)|engine::content::(operations|workflow|copymove|locking|files|recyclebin|comments|blobs)::')
fam_items = collections.defaultdict(set); fam_retained = collections.Counter()
k = 0
while k < len(rows):
    d, ret, name = rows[k]
    if d == top:
        fam = next((f for f, p in FAMILIES + [WRITES] if re.search(p, name)), None)
        j = k + 1
        while j < len(rows) and rows[j][0] > d: j += 1
        if fam:
            fam_retained[fam] += ret
            for _, _, n in rows[k:j]:
                it = item(n)
                if it: fam_items[fam].add(it)
        k = j
    else:
        k += 1

def blob(skip=frozenset()):
    return b''.join(b for x, b in enumerate(bodies) if ('f', x) not in skip) + \
           b''.join(s for x, s in enumerate(segs) if ('d', x) not in skip)
base = len(zlib.compress(blob(), 9))
print(f'code+data of the module: {len(blob())} bytes, {base} gzip -9 (functions {len(bodies)}, data segments {len(segs)})')
print(f'{"family":40} {"retained B":>11} {"gzip saved":>11}')
allitems = set(); tot = 0
for fam, _ in FAMILIES:
    items = fam_items.get(fam, set())
    allitems |= items
    saved = base - len(zlib.compress(blob(frozenset(items)), 9))
    tot += fam_retained[fam]
    print(f'{fam:40} {fam_retained[fam]:11d} {saved:11d}')
saved = base - len(zlib.compress(blob(frozenset(allitems)), 9))
print(f'{"all of them":40} {tot:11d} {saved:11d}   (left in the first module: {base - saved} gzip)')
w = fam_items.get(WRITES[0], set())
saved_w = base - len(zlib.compress(blob(frozenset(allitems | w)), 9))
print(f'{"all of them + " + WRITES[0]:40} {tot + fam_retained[WRITES[0]]:11d} {saved_w:11d}   (left: {base - saved_w} gzip)')
code = b''.join(b for x, b in enumerate(bodies) if ('f', x) not in allitems | w)
dat = b''.join(s for x, s in enumerate(segs) if ('d', x) not in allitems | w)
print(f'what is left: code {len(code)} B ({len(zlib.compress(code, 9))} gzip alone), data {len(dat)} B ({len(zlib.compress(dat, 9))} gzip alone)')
