//! Expansion: `?expand=workflow,navigation,...` on a content GET embeds each named component's
//! full answer under `@components.<name>` instead of the bare `{"@id"}` link. Families register
//! their components and expanders with the route table ([`super::router::Registry::component`]).

use serde_json::{Map, Value};

use super::Route;
use crate::core::error::Result;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;

/// The component names asked for with `expand` (comma-separated, repeatable).
pub fn requested(route: &Route) -> Vec<String> {
    route
        .query
        .all("expand")
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The `@components` of `obj`: a link for every registered component, replaced by its full
/// answer for every requested component that can be expanded (names that cannot keep their
/// link, as the reference does). `route` is `None` where nothing may be expanded.
pub fn components(
    ctx: &Ctx<'_>,
    route: Option<&Route>,
    obj: &ContentRecord,
) -> Result<Map<String, Value>> {
    let table = super::router::table();
    let url = ctx.url(&obj.path);
    let mut out = Map::new();
    let anonymous = ctx.principal.is_anonymous();
    for c in table
        .components
        .iter()
        .filter(|c| !(anonymous && c.members_only))
    {
        let mut link = Map::new();
        link.insert("@id".into(), Value::String(format!("{url}/@{}", c.name)));
        out.insert(c.name.to_string(), Value::Object(link));
    }
    if let Some(route) = route {
        for name in requested(route) {
            let component = table
                .component_named(&name)
                .filter(|c| !(anonymous && c.members_only));
            if let Some(expand) = component.and_then(|c| c.expander) {
                out.insert(name, expand(ctx, route, obj)?);
            }
        }
    }
    Ok(out)
}
