//! iCalendar export (RFC 5545) of events: one Event, or every Event the caller may view at and
//! below a folder, as Nick's `ics_view` serves them. Written with the `icalendar` crate; every
//! component gets its `DTSTAMP` (the engine's clock) and `UID` (the object's uid) from here, so
//! the crate never reads the system clock or draws a random uid (neither exists in the browser
//! host, and answers stay deterministic under the test clock).

use chrono::{DateTime, Duration, Utc};
use icalendar::{Calendar, Component, Event, EventLike};

use crate::content::tree;
use crate::core::error::Result;
use crate::core::model::fields::parse_datetime;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// The type whose objects are exported.
pub const EVENT_TYPE: &str = "Event";

/// The behavior that gives a type `start` and `end`.
pub const EVENT_BEHAVIOR: &str = "plone.eventbasic";

/// An event's `end` must not lie before its `start` (a 400 naming `end`).
pub fn check_dates(fields: &serde_json::Map<String, serde_json::Value>) -> Result<()> {
    let at = |name: &str| {
        fields
            .get(name)
            .and_then(|v| v.as_str())
            .and_then(parse_datetime)
    };
    if let (Some(start), Some(end)) = (at("start"), at("end")) {
        if end < start {
            return Err(crate::core::error::EngineError::bad_request(
                "Field 'end': an event cannot end before it starts",
            ));
        }
    }
    Ok(())
}

/// The events to export for `obj`: itself when it is an event, else every event at or below it
/// that the caller may view, in tree order.
pub fn events_at(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<ContentRecord>> {
    if obj.type_name == EVENT_TYPE {
        return Ok(vec![obj.clone()]);
    }
    let mut out = Vec::new();
    for o in tree::subtree(ctx, obj)? {
        if o.type_name == EVENT_TYPE && ctx.permitted(Permission::View, &o)? {
            out.push(o);
        }
    }
    Ok(out)
}

/// The iCalendar text of `events`; `name` becomes the calendar's `X-WR-CALNAME`.
pub fn ics(ctx: &Ctx<'_>, name: &str, events: &[ContentRecord]) -> String {
    let mut cal = Calendar::empty();
    cal.append_property(("VERSION", "2.0"));
    cal.append_property(("PRODID", "-//plone-rest-rs//NONSGML content engine//EN"));
    cal.append_property(("X-WR-CALNAME", name));
    cal.append_property(("X-WR-TIMEZONE", "UTC"));
    let now = ctx.now();
    for rec in events {
        cal.push(vevent(ctx, rec, now));
    }
    cal.to_string()
}

fn time_field(rec: &ContentRecord, name: &str) -> Option<DateTime<Utc>> {
    parse_datetime(rec.str_field(name))
}

fn vevent(ctx: &Ctx<'_>, rec: &ContentRecord, now: DateTime<Utc>) -> Event {
    let mut ev = Event::new();
    ev.uid(&rec.uid)
        .timestamp(now)
        .summary(rec.title())
        .created(rec.created)
        .last_modified(rec.modified);
    if !rec.description().is_empty() {
        ev.description(rec.description());
    }
    let whole_day = rec.fields.get("whole_day").and_then(|v| v.as_bool()) == Some(true);
    let open_end = rec.fields.get("open_end").and_then(|v| v.as_bool()) == Some(true);
    let start = time_field(rec, "start");
    let end = time_field(rec, "end");
    if let Some(s) = start {
        if whole_day {
            ev.starts(s.date_naive());
            // DTEND of a date is exclusive: the day after the last day.
            let last = end.unwrap_or(s).date_naive();
            if !open_end {
                ev.ends(last + Duration::days(1));
            }
        } else {
            ev.starts(s);
            if let (Some(e), false) = (end, open_end) {
                ev.ends(e);
            }
        }
    }
    let location = rec.str_field("location");
    if !location.is_empty() {
        ev.location(location);
    }
    let url = rec.str_field("event_url");
    if url.is_empty() {
        ev.url(&ctx.url(&rec.path));
    } else {
        ev.url(url);
    }
    let contact: Vec<&str> = ["contact_name", "contact_email", "contact_phone"]
        .iter()
        .map(|f| rec.str_field(f))
        .filter(|s| !s.is_empty())
        .collect();
    if !contact.is_empty() {
        ev.add_property("CONTACT", contact.join(", "));
    }
    for line in rec.str_field("recurrence").lines() {
        let line = line.trim();
        if let Some(rule) = line.strip_prefix("RRULE:") {
            ev.add_property("RRULE", rule);
        } else if line.starts_with("FREQ=") {
            ev.add_property("RRULE", line);
        }
    }
    if let Some(subjects) = rec.fields.get("subjects").and_then(|v| v.as_array()) {
        let cats: Vec<&str> = subjects.iter().filter_map(|s| s.as_str()).collect();
        if !cats.is_empty() {
            ev.categories(cats);
        }
    }
    ev.done()
}
