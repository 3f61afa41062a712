//! The content bodies `@openapi` publishes (one schema per type, built from the type registry)
//! and the parse of content POST and PATCH agree: for every type and every property of its
//! schema, each value of a pool (right and wrong shapes of every field kind) is refused by the
//! parse exactly when the published schema refuses it. The pool keeps to what a schema can
//! decide: the uploads are real images (that an image field's bytes decode is the parse's
//! alone), and dates keep an event's end after its start (one field cannot see another).

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::{json, Map, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0"; // admin:secret
/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn call(e: &Engine<MemStore>, method: Method, path: &str, body: &Value) -> (u16, Value) {
    let resp = e.handle(
        Request::new(method, path, BASE)
            .header("Authorization", ADMIN)
            .json(body),
    );
    let body = if resp.body.is_empty() {
        Value::Null
    } else {
        resp.json_body()
    };
    (resp.status, body)
}

/// Values of every shape the field kinds take or refuse; `uid` is an existing object's UID.
/// Dates ascend, so the first and the last accepted ones make a valid event.
fn pool(uid: &str) -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(3),
        json!(-2),
        json!(1.5),
        json!(""),
        json!("   "),
        json!("x"),
        json!("Hello world"),
        json!("two\nlines"),
        json!("a@b.org"),
        json!("not an address"),
        json!("a@b"),
        json!("https://example.org/x"),
        json!("2001-02-03"),
        json!("2020-05-06T07:08"),
        json!("2021-01-02T03:04:05Z"),
        json!("2022-03-04T05:06:07+02:00"),
        json!("2023-03-04 05:06:07"),
        json!("tomorrow"),
        json!("de"),
        json!("EN"),
        json!("xx-nope"),
        json!({"token": "fr", "title": "French"}),
        json!({"token": 5}),
        json!([]),
        json!(["a", "b"]),
        json!([1]),
        json!([uid]),
        json!([{"UID": uid}]),
        json!([{"UID": 7}]),
        json!({}),
        json!({"data": "<p>Hi</p>"}),
        json!({"data": "Hi", "content-type": "text/plain"}),
        json!({"data": 5}),
        json!({"items": []}),
        json!({"items": [1]}),
        json!({"b1": {"@type": "text"}}),
        json!({"b1": {"@type": "slate", "value": [{"children": [{"text": "Hi"}]}], "plaintext": "Hi"}}),
        json!({"b1": {"@type": "slate", "value": [{"text": 5}]}}),
        json!({"b1": {}}),
        json!({"": {"@type": "text"}}),
        json!([{"i": "portal_type", "o": "plone.app.querystring.operation.selection.any", "v": ["Page"]}]),
        json!([{"i": "portal_type"}]),
        json!([{"i": "portal_type", "o": "x", "extra": 1}]),
        png_upload(),
        json!({"data": PNG, "encoding": "base64"}),
        json!({"data": PNG, "encoding": "rot13"}),
        json!({"data": PNG, "encoding": "base64", "bogus": 1}),
        json!({"filename": "dot.png"}),
        json!(["x", "x"]),
        json!(["x", "EN"]),
        json!([{"token": "x"}]),
        json!({"token": "x", "title": "X"}),
        json!({"title": "X"}),
    ]
}

/// An upload of [`PNG`].
fn png_upload() -> Value {
    json!({"data": PNG, "encoding": "base64", "filename": "dot.png", "content-type": "image/png"})
}

/// Whether the schema of a field says its uploads are images (`contentMediaType`, an
/// annotation) and `v` is an upload of other bytes: whether those decode is the parse's to say.
fn undecidable(field_schema: &Value, v: &Value) -> bool {
    field_schema
        .to_string()
        .contains("\"contentMediaType\":\"image/*\"")
        && v.get("data").is_some_and(|d| d != PNG)
}

struct Checker {
    validator: jsonschema::Validator,
}

impl Checker {
    fn new(components: &Value, name: &str) -> Self {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("#/components/schemas/{name}"),
            "components": components,
        });
        let validator = jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("schema {name} does not compile: {e}"));
        Checker { validator }
    }

    fn accepts(&self, body: &Value) -> bool {
        self.validator.is_valid(body)
    }
}

/// A body of `base` with `key` set to `value`.
fn with(base: &Map<String, Value>, key: &str, value: &Value) -> Value {
    let mut b = base.clone();
    b.insert(key.to_string(), value.clone());
    Value::Object(b)
}

/// The keys of a type schema that name fields (not `@type`, `id` or a PATCH's extras).
fn field_keys(schema: &Value) -> Vec<String> {
    schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .filter(|k| !matches!(k.as_str(), "@type" | "id" | "ordering" | "sort"))
        .cloned()
        .collect()
}

/// Note in `problems` when the parse's answer (`done` on success, else a 400) and the schema's
/// verdict differ; any other status fails at once.
fn compare(
    problems: &mut Vec<String>,
    what: &str,
    schema_says: bool,
    done: u16,
    (status, answer): (u16, Value),
) {
    assert!(status == done || status == 400, "{what}: {status} {answer}");
    if schema_says != (status == done) {
        problems.push(format!(
            "{what}: schema {}, parse {status} {}",
            if schema_says { "accepts" } else { "refuses" },
            answer["message"]
        ));
    }
}

/// Page gains a field of each kind the built-in types lack (a Relation Choice's target, like a
/// related item's, is the parse's alone: it is left out), with values from the pool.
fn add_field_kinds(e: &Engine<MemStore>) {
    for (factory, title, values) in [
        ("Date", "Due", None),
        ("Password", "Code", None),
        ("Choice", "Pick", Some(json!(["x", "de|German"]))),
        (
            "label_multi_choice_field",
            "Picks",
            Some(json!(["x", "EN"])),
        ),
    ] {
        let mut body = json!({"factory": factory, "title": title});
        if let Some(v) = values {
            body["values"] = v;
        }
        let (status, answer) = call(e, Method::Post, "/@types/Page", &body);
        assert_eq!(status, 201, "{factory}: {answer}");
    }
}

#[test]
fn every_type_and_field_is_parsed_as_its_published_schema_says() {
    let e = engine();
    add_field_kinds(&e);
    let (status, doc) = call(&e, Method::Get, "/@openapi", &Value::Null);
    assert_eq!(status, 200);
    let components = doc["components"].clone();
    let post =
        &doc["paths"]["/{path}"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let mapping = post["discriminator"]["mapping"]
        .as_object()
        .expect("the POST body is told apart by @type")
        .clone();
    assert!(mapping.len() >= 8, "{mapping:?}");
    assert_eq!(
        post["oneOf"].as_array().map(Vec::len),
        Some(mapping.len()),
        "one schema per type"
    );
    let (_, root) = call(&e, Method::Get, "/", &Value::Null);
    let uid = root["UID"].as_str().expect("root UID").to_string();
    let pool = pool(&uid);
    let mut problems = Vec::new();
    let mut n = 0usize;
    let mut next_id = || {
        n += 1;
        format!("t{n}")
    };
    for (type_name, target) in &mapping {
        let create_name = target
            .as_str()
            .and_then(|t| t.strip_prefix("#/components/schemas/"))
            .expect("a component reference");
        let create_schema = &components["schemas"][create_name];
        let create = Checker::new(&components, create_name);

        // Every field the registry gives the type (its form schema) is described.
        let (status, form) = call(
            &e,
            Method::Get,
            &format!("/@types/{}", type_name.replace(' ', "%20")),
            &Value::Null,
        );
        assert_eq!(status, 200, "@types/{type_name}");
        let keys = field_keys(create_schema);
        for f in form["properties"]
            .as_object()
            .expect("form properties")
            .keys()
        {
            assert!(
                keys.contains(f),
                "{type_name}: field '{f}' is not in its schema"
            );
        }

        // A valid body: each required field takes the first pool value its schema accepts (the
        // last for `end`, so that an event ends after it starts).
        let mut base = Map::new();
        base.insert("@type".into(), json!(type_name));
        for req in create_schema["required"].as_array().expect("required") {
            let f = req.as_str().expect("a name");
            if f == "@type" {
                continue;
            }
            let field = Checker::new(
                &components,
                &format!("{create_name}/properties/{}", f.replace('~', "~0")),
            );
            let field_schema = &create_schema["properties"][f];
            let accepted: Vec<&Value> = pool
                .iter()
                .filter(|v| field.accepts(v) && !undecidable(field_schema, v))
                .collect();
            let pick = if f == "end" {
                accepted.last()
            } else {
                accepted.first()
            };
            base.insert(f.to_string(), (*pick.expect("some value fits")).clone());
        }
        let mut valid = base.clone();
        valid.insert("id".into(), json!(next_id()));
        let (status, answer) = call(&e, Method::Post, "/", &Value::Object(valid));
        assert_eq!(
            status, 201,
            "{type_name}: the base body is accepted: {answer}"
        );

        // POST: every field, every value.
        for key in &keys {
            let field_schema = &create_schema["properties"][key];
            for v in pool.iter().filter(|v| !undecidable(field_schema, v)) {
                let mut body = with(&base, key, v);
                let schema_says = create.accepts(&body);
                body["id"] = json!(next_id());
                let answer = call(&e, Method::Post, "/", &body);
                let what = format!("POST {type_name}.{key} = {v}");
                compare(&mut problems, &what, schema_says, 201, answer);
            }
        }

        // PATCH: every field, every value, on an object of the type whose file fields hold a
        // file (so that sending one back as served keeps it).
        let changes_name = format!("{create_name}Changes");
        let changes = Checker::new(&components, &changes_name);
        let mut fixture = base.clone();
        for key in &keys {
            let def = &create_schema["properties"][key];
            if def.to_string().contains("Upload") {
                fixture.insert(key.clone(), png_upload());
            }
        }
        for key in &keys {
            let id = next_id();
            let mut body = fixture.clone();
            body.insert("id".into(), json!(id));
            let (status, answer) = call(&e, Method::Post, "/", &Value::Object(body));
            assert_eq!(
                status, 201,
                "{type_name}: the fixture is accepted: {answer}"
            );
            let field_schema = &create_schema["properties"][key];
            for v in pool.iter().filter(|v| !undecidable(field_schema, v)) {
                let body = json!({ key.as_str(): v });
                let schema_says = changes.accepts(&body);
                let answer = call(&e, Method::Patch, &format!("/{id}"), &body);
                let what = format!("PATCH {type_name}.{key} = {v}");
                compare(&mut problems, &what, schema_says, 204, answer);
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} disagreement(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn an_unknown_field_or_a_wrong_type_is_refused_by_both() {
    let e = engine();
    let (_, doc) = call(&e, Method::Get, "/@openapi", &Value::Null);
    let page = Checker::new(&doc["components"], "Page");
    let unknown = json!({"@type": "Page", "title": "T", "shoe_size": 44});
    assert!(!page.accepts(&unknown));
    assert_eq!(call(&e, Method::Post, "/", &unknown).0, 400);
    let echoed = json!({"@type": "Page", "title": "T", "UID": "x", "@components": {}, "review_state": "private"});
    assert!(page.accepts(&echoed));
    assert_eq!(call(&e, Method::Post, "/", &echoed).0, 201);
    let folder_as_page = json!({"@type": "Folder", "title": "T"});
    assert!(!page.accepts(&folder_as_page));
}
