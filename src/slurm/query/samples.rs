//! Times the query tests are made of.

use chrono::{DateTime, FixedOffset, NaiveDateTime};

pub(super) fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(y, mo, d)
        .and_then(|day| day.and_hms_opt(h, mi, s))
        .unwrap()
}

pub(super) fn recorded(text: &str) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(text).unwrap()
}
