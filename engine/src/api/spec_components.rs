//! `@components` links the spec names whose endpoint families are not served yet (related).
//! Every content object lists them, as the reference does, so clients find them where they
//! expect; each family that comes to serve one registers it itself instead (with its expander)
//! and its line here goes.

use super::router::Registry;

/// Register the links.
pub fn register(r: &mut Registry) {
    r.component("related", None);
}
