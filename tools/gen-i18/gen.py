"""Writes tests/scenarios/i18_*.json (run from the worktree root)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
from common import req, step, entry, page, write

V = lambda n: "{{var:%s}}" % n
S = lambda n: "{{string|save:%s}}" % n

# ---------------------------------------------------------------- the feed
steps = [
    step("without since: the current cursor and no entries", req("GET", "/@changes"), 200,
         page("{base}/@changes", S("c0"), [])),
    step("the root's version now", req("GET", "/"), 200, {"UID": "{{uid|save:root}}"},
         headers={"ETag": S("eroot0")}, match="subset"),
    step("create a folder", req("POST", "/", body={"@type": "Folder", "title": "Docs"}), 201,
         {"UID": "{{uid|save:docs}}"}, match="subset"),
    step("create page A in it", req("POST", "/docs", body={"@type": "Page", "title": "A"}), 201,
         {"UID": "{{uid|save:a}}"}, match="subset"),
    step("create page B in it", req("POST", "/docs", body={"@type": "Page", "title": "B"}), 201,
         {"UID": "{{uid|save:b}}"}, match="subset"),
    step("edit A", req("PATCH", "/docs/a", body={"title": "A, edited"}), 204,
         headers={"ETag": S("ea")}),
    step("the root's version after its new child", req("GET", "/"), 200, {"UID": V("root")},
         headers={"ETag": S("eroot1")}, match="subset"),
    step("the folder's version", req("GET", "/docs"), 200, {"UID": V("docs")},
         headers={"ETag": S("edocs")}, match="subset"),
    step("B's version", req("GET", "/docs/b"), 200, {"UID": V("b")},
         headers={"ETag": S("eb")}, match="subset"),
    step("since the first cursor: each object once, at its latest change, with the ETag a GET answers",
         req("GET", "/@changes?since=" + V("c0")), 200,
         page("{base}/@changes?since=" + V("c0"), S("c1"), [
             entry("modified", V("root"), "/", None, V("eroot1")),
             entry("added", V("b"), "/docs/b", V("docs"), V("eb")),
             entry("added", V("docs"), "/docs", V("root"), V("edocs")),
             entry("added", V("a"), "/docs/a", V("docs"), V("ea")),
         ])),
    step("the same in pages of two: the first says more follow",
         req("GET", "/@changes?since=" + V("c0") + "&limit=2"), 200,
         page("{base}/@changes?since=" + V("c0") + "&limit=2", S("p1"), [
             entry("modified", V("root"), "/", None, V("eroot1")),
             entry("added", V("b"), "/docs/b", V("docs"), V("eb")),
         ], more=True)),
    step("the second page from the first page's cursor ends the list (added and modified are relative to the since asked from: the folder and A were added before it)",
         req("GET", "/@changes?since=" + V("p1") + "&limit=2"), 200,
         page("{base}/@changes?since=" + V("p1") + "&limit=2", V("c1"), [
             entry("modified", V("docs"), "/docs", V("root"), V("edocs")),
             entry("modified", V("a"), "/docs/a", V("docs"), V("ea"), cursor=V("c1")),
         ])),
    step("nothing changed since the last cursor", req("GET", "/@changes?since=" + V("c1")), 200,
         page("{base}/@changes?since=" + V("c1"), V("c1"), [])),
    step("a move is a modification with the new path", req("PATCH", "/docs/a", body={"id": "a2"}), 204),
    step("A's version after the rename", req("GET", "/docs/a2"), 200, {"UID": V("a")},
         headers={"ETag": S("ea2")}, match="subset"),
    step("the folder's version after the rename", req("GET", "/docs"), 200, {"UID": V("docs")},
         headers={"ETag": S("edocs2")}, match="subset"),
    step("since then: A modified at its new path (and the folder whose child list changed)",
         req("GET", "/@changes?since=" + V("c1")), 200,
         page("{base}/@changes?since=" + V("c1"), S("c2"), [
             entry("modified", V("a"), "/docs/a2", V("docs"), V("ea2")),
             entry("modified", V("docs"), "/docs", V("root"), V("edocs2")),
         ]),),
    step("a changes feed on the folder lists only what is at and below it (others as removed)",
         req("GET", "/docs/@changes?since=" + V("c0")), 200,
         page("{base}/docs/@changes?since=" + V("c0"), "{{string}}", [
             entry("removed", V("root")),
             entry("added", V("b"), "/docs/b", V("docs"), V("eb")),
             entry("added", V("a"), "/docs/a2", V("docs"), V("ea2")),
             entry("added", V("docs"), "/docs", V("root"), V("edocs2")),
         ])),
    step("anonymous callers see the private objects as removed, the root as it is",
         req("GET", "/@changes?since=" + V("c0"), auth="anonymous"), 200,
         page("{base}/@changes?since=" + V("c0"), "{{string}}", [
             entry("modified", V("root"), "/", None, V("eroot1")),
             entry("removed", V("b")),
             entry("removed", V("a")),
             entry("removed", V("docs")),
         ])),
    step("delete the folder", req("DELETE", "/docs"), 204),
    step("the root's version after the delete", req("GET", "/"), 200, {"UID": V("root")},
         headers={"ETag": S("eroot2")}, match="subset"),
    step("its pages are removed with it",
         req("GET", "/@changes?since=" + V("c2")), 200,
         page("{base}/@changes?since=" + V("c2"), S("c3"), [
             entry("modified", V("root"), "/", None, V("eroot2")),
             entry("removed", V("a")),
             entry("removed", V("b")),
             entry("removed", V("docs")),
         ])),
    step("a malformed since is a 400 naming it", req("GET", "/@changes?since=yesterday"), 400,
         {"type": "BadRequest", "message": "{{contains:since}}"}),
    step("a limit of 0 is a 400 naming it", req("GET", "/@changes?since=" + V("c0") + "&limit=0"), 400,
         {"type": "BadRequest", "message": "{{contains:limit}}"}),
    step("a limit over 1000 is a 400", req("GET", "/@changes?since=" + V("c0") + "&limit=1001"), 400,
         {"type": "BadRequest", "message": "{{contains:limit}}"}),
    step("a limit that is no number is a 400", req("GET", "/@changes?since=" + V("c0") + "&limit=ten"), 400,
         {"type": "BadRequest", "message": "{{contains:limit}}"}),
    step("a cursor of another site is expired (410)", req("GET", "/@changes?since=00000000.1"), 410,
         {"type": "CursorExpired", "message": "{{contains:another site}}"}),
    step("after the refusals the feed still ends at the last change",
         req("GET", "/@changes"), 200, page("{base}/@changes", V("c3"), [])),
]
write("i18_changes_feed",
      "The change feed GET /@changes: without since only the current cursor; since a cursor each "
      "changed object once at its latest position (added, modified, removed) with the ETag a GET "
      "answers as version; paging with limit and more; a move is modified with the new path; a "
      "folder's feed lists what is below it; anonymous callers see private objects as removed; a "
      "delete removes the subtree; malformed since and limit are 400s and a foreign cursor a 410, "
      "changing nothing.", steps)

# ---------------------------------------------------------------- permissions
MIA = "basic:mia:mia-password"
steps = [
    step("create a private folder", req("POST", "/", body={"@type": "Folder", "title": "Team"}), 201,
         {"UID": "{{uid|save:team}}"}, match="subset"),
    step("and a page in it", req("POST", "/team", body={"@type": "Page", "title": "Doc"}), 201,
         {"UID": "{{uid|save:doc}}"}, match="subset"),
    step("a member", req("POST", "/@users", body={"username": "mia", "password": "mia-password",
         "email": "mia@example.com", "roles": ["Member"]}), 201, {"id": "mia"}, match="subset"),
    step("the member takes the current cursor", req("GET", "/@changes", auth=MIA), 200,
         page("{base}/@changes", S("m0"), [])),
    step("the member may not follow the feed of a folder she cannot view",
         req("GET", "/team/@changes?since=" + V("m0"), auth=MIA), 403, {"type": "Forbidden", "message": "{{string}}"}),
    step("anonymous callers neither", req("GET", "/team/@changes?since=" + V("m0"), auth="anonymous"), 401,
         {"type": "Unauthorized", "message": "{{string}}", "context": "{base}/team"}),
    step("share the folder with her (Reader)", req("POST", "/team/@sharing", body={"entries": [
         {"id": "mia", "type": "user", "roles": {"Reader": True}}]}), 204),
    step("the folder's version", req("GET", "/team"), 200, {"UID": V("team")},
         headers={"ETag": S("eteam")}, match="subset"),
    step("the page's version", req("GET", "/team/doc"), 200, {"UID": V("doc")},
         headers={"ETag": S("edoc")}, match="subset"),
    step("a sharing change marks the whole subtree: she now sees the folder and the page",
         req("GET", "/@changes?since=" + V("m0"), auth=MIA), 200,
         page("{base}/@changes?since=" + V("m0"), S("m1"), [
             entry("modified", V("team"), "/team", "{{uid}}", V("eteam")),
             entry("modified", V("doc"), "/team/doc", V("team"), V("edoc")),
         ])),
    step("so does the folder's own feed, which she may read now",
         req("GET", "/team/@changes?since=" + V("m0"), auth=MIA), 200,
         page("{base}/team/@changes?since=" + V("m0"), V("m1"), [
             entry("modified", V("team"), "/team", "{{uid}}", V("eteam")),
             entry("modified", V("doc"), "/team/doc", V("team"), V("edoc")),
         ])),
    step("take her role away", req("POST", "/team/@sharing", body={"entries": [
         {"id": "mia", "type": "user", "roles": {"Reader": False}}]}), 204),
    step("the folder's version after that", req("GET", "/team"), 200, {"UID": V("team")},
         headers={"ETag": S("eteam2")}, match="subset"),
    step("she sees both as removed (and drops them)",
         req("GET", "/@changes?since=" + V("m1"), auth=MIA), 200,
         page("{base}/@changes?since=" + V("m1"), "{{string}}", [
             entry("removed", V("team")),
             entry("removed", V("doc")),
         ])),
    step("the manager still sees them as modified",
         req("GET", "/@changes?since=" + V("m1")), 200,
         page("{base}/@changes?since=" + V("m1"), S("m2"), [
             entry("modified", V("team"), "/team", "{{uid}}", V("eteam2")),
             entry("modified", V("doc"), "/team/doc", V("team"), V("edoc")),
         ])),
    step("publish the page", req("POST", "/team/doc/@workflow/publish"), 200, {"review_state": "published"},
         match="subset"),
    step("the page's version after the transition", req("GET", "/team/doc"), 200, {"UID": V("doc")},
         headers={"ETag": S("edoc2")}, match="subset"),
    step("anonymous callers now see the published page (its private folder stays hidden)",
         req("GET", "/@changes?since=" + V("m2"), auth="anonymous"), 200,
         page("{base}/@changes?since=" + V("m2"), S("a1"), [
             entry("modified", V("doc"), "/team/doc", V("team"), V("edoc2")),
         ])),
    step("retract it", req("POST", "/team/doc/@workflow/retract"), 200, {"review_state": "private"},
         match="subset"),
    step("to anonymous callers it is removed again",
         req("GET", "/@changes?since=" + V("a1"), auth="anonymous"), 200,
         page("{base}/@changes?since=" + V("a1"), "{{string}}", [entry("removed", V("doc"))])),
]
write("i18_changes_permissions",
      "The change feed is filtered by what the caller may view now: a sharing change marks the "
      "subtree, so a member given a local role sees the folder and its page and, when the role is "
      "taken away, sees them as removed while the manager sees them modified; a workflow transition "
      "shows a published page to anonymous callers and a retracted one as removed; the feed of a "
      "folder the caller cannot view is 401/403.", steps)

# ---------------------------------------------------------------- expiry
steps = [
    step("a page", req("POST", "/", body={"@type": "Page", "title": "Old"}), 201, {"@id": "{base}/old"}, match="subset"),
    step("a cursor", req("GET", "/@changes"), 200, page("{base}/@changes", S("c0"), [])),
    step("delete the page", req("DELETE", "/old"), 204),
    step("31 days later", req("POST", "/@test-clock", body={"advance": 31 * 24 * 3600}), 200, "{{any}}"),
    step("another page", req("POST", "/", body={"@type": "Page", "title": "New"}), 201, {"@id": "{base}/new"}, match="subset"),
    step("deleting it records a removal and drops those older than 30 days", req("DELETE", "/new"), 204),
    step("the old cursor would miss a dropped removal: 410", req("GET", "/@changes?since=" + V("c0")), 410,
         {"type": "CursorExpired", "message": "{{contains:30 days}}"}),
    step("a fresh cursor", req("GET", "/@changes"), 200, page("{base}/@changes", S("c1"), [])),
    step("follows on", req("GET", "/@changes?since=" + V("c1")), 200,
         page("{base}/@changes?since=" + V("c1"), V("c1"), [])),
]
write("i18_changes_expired",
      "Removals stay in the change log for 30 days; once one is dropped (when a later removal is "
      "recorded) a cursor from before it answers 410 CursorExpired, and a new cursor works.", steps)

# ---------------------------------------------------------------- idempotency
K = lambda k: {"Idempotency-Key": k}
steps = [
    step("a create with an Idempotency-Key", req("POST", "/", body={"@type": "Page", "title": "Once"}, headers=K("create-once-1")), 201,
         {"@id": "{base}/once", "UID": "{{uid|save:once}}", "title": "Once"},
         headers={"Location": "{base}/once", "ETag": S("e1"), "Idempotent-Replayed": None}, match="subset"),
    step("sent again: the same answer, replayed, nothing created", req("POST", "/", body={"@type": "Page", "title": "Once"}, headers=K("create-once-1")), 201,
         {"@id": "{base}/once", "UID": V("once"), "title": "Once"},
         headers={"Location": "{base}/once", "ETag": V("e1"), "Content-Type": "application/json", "Idempotent-Replayed": "true"}, match="subset"),
    step("there is no second page", req("GET", "/once-1"), 404, {"type": "NotFound", "message": "{{string}}", "context": "{{any}}"}, match="subset"),
    step("the root lists one", req("GET", "/?b_size=100"), 200, {"items_total": 1}, match="subset"),
    step("the same key for another path is a 422 naming the header", req("PATCH", "/once", body={"title": "Other"}, headers=K("create-once-1")), 422,
         {"type": "Unprocessable", "message": "{{contains:Idempotency-Key}}"}),
    step("the same key with another method too", req("DELETE", "/", headers=K("create-once-1")), 422,
         {"type": "Unprocessable", "message": "{{contains:Idempotency-Key}}"}),
    step("nothing changed", req("GET", "/once"), 200, {"title": "Once"}, headers={"ETag": V("e1")}, match="subset"),
    step("a key with a space is a 400", req("POST", "/", body={"@type": "Page", "title": "Bad"}, headers=K("two words")), 400,
         {"type": "BadRequest", "message": "{{contains:Idempotency-Key}}"}),
    step("a key of 256 characters is a 400", req("POST", "/", body={"@type": "Page", "title": "Bad"}, headers=K("k" * 256)), 400,
         {"type": "BadRequest", "message": "{{contains:Idempotency-Key}}"}),
    step("neither created anything", req("GET", "/bad"), 404, {"type": "NotFound"}, match="subset"),
    step("an edit with a key", req("PATCH", "/once", body={"title": "Twice"}, headers=K("edit-1")), 204,
         headers={"ETag": S("e2"), "Idempotent-Replayed": None}),
    step("an edit without one", req("PATCH", "/once", body={"title": "Third"}), 204),
    step("the keyed edit sent again is replayed, not run", req("PATCH", "/once", body={"title": "Twice"}, headers=K("edit-1")), 204,
         headers={"ETag": V("e2"), "Idempotent-Replayed": "true"}),
    step("so the later edit stays", req("GET", "/once"), 200, {"title": "Third"}, match="subset"),
    step("a refused request is not remembered", req("POST", "/", body={"@type": "Nope", "title": "X"}, headers=K("create-2")), 400,
         {"type": "BadRequest"}, match="subset"),
    step("the same key then runs", req("POST", "/", body={"@type": "Page", "title": "Second"}, headers=K("create-2")), 201,
         {"@id": "{base}/second"}, headers={"Idempotent-Replayed": None}, match="subset"),
    step("keys are per caller: anonymous callers sending the same key are not answered from the admin's record",
         req("POST", "/", auth="anonymous", body={"@type": "Page", "title": "Anon"}, headers=K("create-once-1")), 401,
         {"type": "Unauthorized"}, match="subset"),
    step("a day and an hour later", req("POST", "/@test-clock", body={"advance": 25 * 3600}), 200, "{{any}}"),
    step("the key has expired: the request runs again", req("POST", "/", body={"@type": "Page", "title": "Once"}, headers=K("create-once-1")), 201,
         {"@id": "{base}/once-1"}, headers={"Location": "{base}/once-1", "Idempotent-Replayed": None}, match="subset"),
]
write("i18_idempotency",
      "Idempotency-Key on unsafe requests: a 2xx answer is stored for the caller and key; the same "
      "request sent again answers it with Idempotent-Replayed: true without running (no second "
      "create, a later edit not overwritten); the key with another method or path is a 422; a "
      "malformed key a 400 changing nothing; refused requests are not remembered; keys are per "
      "caller and expire after 24 hours.", steps)
