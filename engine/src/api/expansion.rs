//! Expansion: `?expand=workflow,navigation,...` on a content GET embeds each named component's
//! full answer under `@components.<name>` instead of the bare `{"@id"}` link. Families register
//! their components and expanders with the route table ([`super::router::RouteTable::component`]).

use std::sync::OnceLock;

use serde_json::Value;

use super::router::Component;

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

/// The `@components` of `obj`, in name order (the order of the answer's JSON object): each
/// registered component the caller gets (anonymous callers do not get the members-only ones),
/// with its full answer when it was requested and can be expanded, else `None` (its link,
/// `<url>/@<name>`: names that cannot be expanded keep their link, as the reference does).
/// `route` is `None` where nothing may be expanded. The serializer writes the links.
pub fn components(
    ctx: &Ctx<'_>,
    route: Option<&Route>,
    obj: &ContentRecord,
) -> Result<Vec<(&'static str, Option<Value>)>> {
    let table = super::router::table();
    let anonymous = ctx.principal.is_anonymous();
    // Expanded in the order they were asked for (the first failure is the answer); a name
    // asked for twice keeps its last answer.
    let mut expanded: Vec<(&'static str, Value)> = Vec::new();
    if let Some(route) = route {
        for name in requested(route) {
            let component = table
                .component_named(&name)
                .filter(|c| !(anonymous && c.members_only));
            let Some((name, expand)) = component.and_then(|c| Some((c.name, c.expander?))) else {
                continue;
            };
            let value = expand(ctx, route, obj)?;
            match expanded.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => expanded.push((name, value)),
            }
        }
    }
    Ok(by_name()
        .iter()
        .filter(|c| !(anonymous && c.members_only))
        .map(|c| {
            let at = expanded.iter().position(|(n, _)| *n == c.name);
            (c.name, at.map(|i| std::mem::take(&mut expanded[i].1)))
        })
        .collect())
}

/// The registered components in name order (computed once).
fn by_name() -> &'static [Component] {
    static SORTED: OnceLock<Vec<Component>> = OnceLock::new();
    SORTED.get_or_init(|| {
        let mut all = super::router::table().components.clone();
        all.sort_by(|a, b| a.name.cmp(b.name));
        all
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn component_names_are_unique() {
        let names = super::by_name();
        assert!(!names.is_empty());
        assert!(names.windows(2).all(|w| w[0].name < w[1].name));
    }
}
