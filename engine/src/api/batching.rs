//! Batched listings: `b_start`/`b_size` in, `items_total` and a `batching` links object out, as the
//! reference's `batching` transcript shows.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::query::{encode_component, Query};
use crate::core::error::{EngineError, Result};

/// The batching parameters of a listing's query (an empty value means the default).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct BatchQuery {
    /// Offset of the first item (default 0).
    #[serde(default, deserialize_with = "serde_html_form::de::empty_as_none")]
    pub b_start: Option<usize>,
    /// Most items returned (default 25; at least 1, at most the configured maximum). `-1` asks
    /// for every item where a listing allows it ([`Batch::all_allowed`]).
    #[serde(default, deserialize_with = "serde_html_form::de::empty_as_none")]
    pub b_size: Option<i64>,
}

/// Links to the other batches of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BatchLinks {
    /// This batch.
    #[serde(rename = "@id")]
    pub id: String,
    /// The first batch.
    pub first: String,
    /// The last batch.
    pub last: String,
    /// The next batch, unless this is the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The previous batch, unless this is the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
}

/// The requested window of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// Offset of the first item.
    pub start: usize,
    /// Most items returned.
    pub size: usize,
}

impl Batch {
    /// Read `b_start`/`b_size` from `query` (defaults: 0 and `default_size`; at most `max_size`).
    pub fn from_query(query: &BatchQuery, default_size: usize, max_size: usize) -> Result<Self> {
        let start = query.b_start.unwrap_or(0);
        let size = match query.b_size {
            None => default_size,
            Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
            Some(_) => {
                return Err(EngineError::bad_request(
                    "Query parameter 'b_size' must be at least 1",
                ))
            }
        };
        // Above the maximum, the maximum: Plone accepts any size (clients ask for 100000 to
        // mean "all"), and the `batching` links lead through the rest.
        Ok(Batch {
            start,
            size: size.min(max_size),
        })
    }

    /// The window a request asks for, with the engine's configured default and maximum sizes.
    pub fn for_route(ctx: &crate::runtime::context::Ctx<'_>, route: &super::Route) -> Result<Self> {
        Self::from_query(
            &super::extract::query(route)?,
            ctx.core.options.default_batch_size,
            ctx.core.options.max_batch_size,
        )
    }

    /// Like [`Batch::for_route`], and `b_size=-1` asks for every item (Volto asks so for the
    /// vocabularies its forms read, as Plone allows). Only for listings computed whole anyway,
    /// where the size limit protects nothing.
    pub fn all_allowed(
        ctx: &crate::runtime::context::Ctx<'_>,
        route: &super::Route,
    ) -> Result<Self> {
        let query: BatchQuery = super::extract::query(route)?;
        if query.b_size == Some(-1) {
            return Ok(Batch {
                start: query.b_start.unwrap_or(0),
                size: usize::MAX,
            });
        }
        Self::for_route(ctx, route)
    }

    /// The `batching` object for a listing of `total` items at `url` (without query), or `None`
    /// when everything fits in one batch.
    pub fn links(
        &self,
        url: &str,
        raw_query: &str,
        query: &Query,
        total: usize,
    ) -> Option<BatchLinks> {
        if total <= self.size && self.start == 0 {
            return None;
        }
        // A `b_size` above the maximum is served as the maximum; the links name the size served.
        let asked_size = |v: &str| v.trim().parse::<usize>().ok() == Some(self.size);
        let rest: Vec<String> = query
            .pairs
            .iter()
            .filter(|(k, v)| k != "b_start" && (k != "b_size" || asked_size(v)))
            .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
            .collect();
        let size_kept = query
            .pairs
            .iter()
            .any(|(k, v)| k == "b_size" && asked_size(v));
        let link = |start: usize| {
            let mut q = format!("b_start={start}");
            if !size_kept {
                q.push_str(&format!("&b_size={}", self.size));
            }
            for r in &rest {
                q.push('&');
                q.push_str(r);
            }
            format!("{url}?{q}")
        };
        let last = if total == 0 {
            0
        } else {
            (total - 1) / self.size * self.size
        };
        let current = if raw_query.is_empty() {
            url.to_string()
        } else {
            format!("{url}?{raw_query}")
        };
        Some(BatchLinks {
            id: current,
            first: link(0),
            last: link(last),
            next: (self.start.saturating_add(self.size) < total)
                .then(|| link(self.start + self.size)),
            prev: (self.start > 0).then(|| link(self.start.saturating_sub(self.size))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_match_the_reference_shape() {
        let q = Query::parse("b_size=5&sort_on=path").unwrap();
        let bq = BatchQuery {
            b_start: None,
            b_size: Some(5),
        };
        let b = Batch::from_query(&bq, 25, 1000).unwrap();
        let links = b
            .links("http://x/f/@search", "b_size=5&sort_on=path", &q, 8)
            .unwrap();
        assert_eq!(
            links.first,
            "http://x/f/@search?b_start=0&b_size=5&sort_on=path"
        );
        assert_eq!(
            links.last,
            "http://x/f/@search?b_start=5&b_size=5&sort_on=path"
        );
        assert_eq!(
            links.next.as_deref(),
            Some("http://x/f/@search?b_start=5&b_size=5&sort_on=path")
        );
        assert!(links.prev.is_none());
        assert!(b.links("http://x", "", &q, 5).is_none());
    }

    #[test]
    fn a_size_above_the_maximum_is_served_as_the_maximum() {
        let q = Query::parse("b_size=100000&sort_on=path").unwrap();
        let bq = BatchQuery {
            b_start: None,
            b_size: Some(100_000),
        };
        let b = Batch::from_query(&bq, 25, 1000).unwrap();
        assert_eq!(
            b,
            Batch {
                start: 0,
                size: 1000
            }
        );
        let links = b
            .links("http://x/f", "b_size=100000&sort_on=path", &q, 2500)
            .unwrap();
        assert_eq!(links.id, "http://x/f?b_size=100000&sort_on=path");
        assert_eq!(
            links.next.as_deref(),
            Some("http://x/f?b_start=1000&b_size=1000&sort_on=path")
        );
        assert_eq!(
            links.last,
            "http://x/f?b_start=2000&b_size=1000&sort_on=path"
        );
    }
}
