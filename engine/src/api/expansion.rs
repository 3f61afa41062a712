//! Expansion: `?expand=workflow,navigation,...` on a content GET embeds each named component's
//! full answer under `@components.<name>` instead of the bare `{"@id"}` link. Every component that
//! can be expanded registers its builder in [`builder`]; that is the one place to plug new ones in.

use serde_json::{Map, Value};

use super::Route;
use crate::context::Ctx;
use crate::error::Result;
use crate::model::ContentRecord;

/// Builds a component's JSON for `obj` (the same body its endpoint's GET answers).
pub type ComponentBuilder = fn(&Ctx<'_>, &Route, &ContentRecord) -> Result<Value>;

/// The builder for component `name`, if it can be expanded.
pub fn builder(name: &str) -> Option<ComponentBuilder> {
    match name {
        "workflow" => Some(super::workflow::status),
        "navigation" => Some(super::navigation::component),
        "breadcrumbs" => Some(super::breadcrumbs::component),
        "navroot" => Some(super::navroot::component),
        "translations" => Some(super::translations::status),
        _ => None,
    }
}

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

/// Replace the links in `components` by the full answers of every requested expandable component.
/// Names that cannot be expanded keep their link, as the reference does.
pub fn expand(
    ctx: &Ctx<'_>,
    route: &Route,
    obj: &ContentRecord,
    components: &mut Map<String, Value>,
) -> Result<()> {
    for name in requested(route) {
        if let Some(build) = builder(&name) {
            components.insert(name, build(ctx, route, obj)?);
        }
    }
    Ok(())
}
