//! Print the OpenAPI document a fresh test site serves: `cargo run -p engine --example openapi_dump`.
use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
fn main() {
    let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("engine");
    engine.create_site(&SiteSetup::new("secret")).expect("site");
    let resp = engine.handle(Request::new(
        Method::Get,
        "/@openapi",
        "http://localhost:8080",
    ));
    println!("{}", String::from_utf8_lossy(&resp.body));
}
