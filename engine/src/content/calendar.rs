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

/// The calendar's product identifier (RFC 5545 `PRODID`).
const PRODID: &str = "-//plone-rest-rs//NONSGML content engine//EN";

/// The iCalendar text of `events`; `name` becomes the calendar's `X-WR-CALNAME` (a Nick site's
/// calendar has none, and lists each event's properties in Nick's order: [`nick_ics`]).
pub fn ics(ctx: &Ctx<'_>, name: &str, events: &[ContentRecord]) -> String {
    if ctx.profile().is_nick() {
        return nick_ics(ctx, events);
    }
    let mut cal = Calendar::empty();
    cal.append_property(("VERSION", "2.0"));
    cal.append_property(("PRODID", PRODID));
    cal.append_property(("X-WR-CALNAME", name));
    cal.append_property(("X-WR-TIMEZONE", "UTC"));
    let now = ctx.now();
    for rec in events {
        cal.push(vevent(ctx, rec, now));
    }
    cal.to_string()
}

/// RFC 5545 text escaping (backslash, semicolon, comma, newline).
fn ics_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Append one content line, folded at 75 octets (RFC 5545 3.1) on character boundaries.
fn push_line(out: &mut String, line: &str) {
    let mut width = 0;
    for c in line.chars() {
        if width + c.len_utf8() > 75 {
            out.push_str("\r\n ");
            width = 1;
        }
        out.push(c);
        width += c.len_utf8();
    }
    out.push_str("\r\n");
}

/// The iCalendar text of `events` as a Nick site writes it: no calendar name, and each event's
/// properties in Nick's order (`SUMMARY`, `DTSTART`, `DTSTAMP`, `UID`, `CREATED`,
/// `LAST-MODIFIED`, `URL`, `DTEND`, `RRULE`), then the location, description and contact.
fn nick_ics(ctx: &Ctx<'_>, events: &[ContentRecord]) -> String {
    let stamp = |t: DateTime<Utc>| t.format("%Y%m%dT%H%M%SZ").to_string();
    let day = |t: DateTime<Utc>| t.format("%Y%m%d").to_string();
    let mut out = String::new();
    push_line(&mut out, "BEGIN:VCALENDAR");
    push_line(&mut out, "VERSION:2.0");
    push_line(&mut out, &format!("PRODID:{PRODID}"));
    push_line(&mut out, "X-WR-TIMEZONE:UTC");
    let now = ctx.now();
    for rec in events {
        let whole_day = rec.fields.get("whole_day").and_then(|v| v.as_bool()) == Some(true);
        let open_end = rec.fields.get("open_end").and_then(|v| v.as_bool()) == Some(true);
        let start = time_field(rec, "start");
        let end = time_field(rec, "end");
        push_line(&mut out, "BEGIN:VEVENT");
        push_line(&mut out, &format!("SUMMARY:{}", ics_text(rec.title())));
        if let Some(s) = start {
            if whole_day {
                push_line(&mut out, &format!("DTSTART;VALUE=DATE:{}", day(s)));
            } else {
                push_line(&mut out, &format!("DTSTART:{}", stamp(s)));
            }
        }
        push_line(&mut out, &format!("DTSTAMP:{}", stamp(now)));
        push_line(&mut out, &format!("UID:{}", rec.uid));
        push_line(&mut out, &format!("CREATED:{}", stamp(rec.created)));
        push_line(&mut out, &format!("LAST-MODIFIED:{}", stamp(rec.modified)));
        let url = rec.str_field("event_url");
        let url = if url.is_empty() {
            ctx.url(&rec.path)
        } else {
            url.to_string()
        };
        push_line(&mut out, &format!("URL:{url}"));
        if let (Some(s), false) = (start, open_end) {
            if whole_day {
                // DTEND of a date is exclusive: the day after the last day.
                let last = end.unwrap_or(s) + Duration::days(1);
                push_line(&mut out, &format!("DTEND;VALUE=DATE:{}", day(last)));
            } else if let Some(e) = end {
                push_line(&mut out, &format!("DTEND:{}", stamp(e)));
            }
        }
        for line in rec.str_field("recurrence").lines() {
            let line = line.trim();
            if let Some(rule) = line.strip_prefix("RRULE:") {
                push_line(&mut out, &format!("RRULE:{rule}"));
            } else if line.starts_with("FREQ=") {
                push_line(&mut out, &format!("RRULE:{line}"));
            }
        }
        let location = rec.str_field("location");
        if !location.is_empty() {
            push_line(&mut out, &format!("LOCATION:{}", ics_text(location)));
        }
        if !rec.description().is_empty() {
            push_line(
                &mut out,
                &format!("DESCRIPTION:{}", ics_text(rec.description())),
            );
        }
        if let Some(contact) = contact(rec) {
            push_line(&mut out, &format!("CONTACT:{}", ics_text(&contact)));
        }
        push_line(&mut out, "END:VEVENT");
    }
    push_line(&mut out, "END:VCALENDAR");
    out
}

/// An event's `CONTACT`: its contact name, e-mail and phone that are set, comma-separated.
fn contact(rec: &ContentRecord) -> Option<String> {
    let parts: Vec<&str> = ["contact_name", "contact_email", "contact_phone"]
        .iter()
        .map(|f| rec.str_field(f))
        .filter(|s| !s.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
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
    if let Some(contact) = contact(rec) {
        ev.add_property("CONTACT", contact);
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
