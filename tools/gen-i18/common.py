"""Helpers that write the i18_* scenarios (tests/scenarios) as JSON: run `python3 tools/gen-i18/gen.py`."""
import json

def req(method, path, auth="admin", body=None, headers=None, raw=None):
    r = {"method": method, "path": path}
    if auth != "anonymous":
        r["auth"] = auth
    if headers:
        r["headers"] = headers
    if body is not None:
        r["json"] = body
    if raw is not None:
        r["raw"] = raw
    return r

def step(name, request, status, body=None, headers=None, match=None, raw=None):
    e = {"status": status}
    if headers:
        e["headers"] = headers
    if body is not None:
        e["json"] = body
    if raw is not None:
        e["raw"] = raw
    if match:
        e["match"] = match
    return {"name": name, "request": request, "expect": e}

def entry(action, uid, path=None, parent=None, version="{{string}}", cursor="{{string}}"):
    if action == "removed":
        return {"cursor": cursor, "action": "removed", "UID": uid, "@id": None, "path": None,
                "parent": None, "version": None, "modified": None}
    return {"cursor": cursor, "action": action, "UID": uid,
            "@id": "{base}" + ("" if path == "/" else path), "path": path, "parent": parent,
            "version": version, "modified": "{{timestamp}}"}

def page(id_, cursor, changes, more=False):
    return {"@id": id_, "cursor": cursor, "more": more, "changes": changes}

def write(name, description, steps):
    doc = {"name": name, "description": description, "steps": steps}
    with open(f"tests/scenarios/{name}.json", "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
