//! Certificates that expire: when a cluster Secret's `caData` or `certData` stops working, said
//! before it does (KCP renews the admin kubeconfig's client certificate at half its one-year
//! life, and an Argo CD Secret made once goes stale, argo-cd issue 19033). The time is the
//! host's, given to the core as a number, so the core stays pure and tests pin the clock.

use krm::finding::{Finding, Severity};

use super::tls::Validity;

/// Seconds in a day.
const DAY: i64 = 86_400;

/// A connection's certificate, as each of the two formats that carry it names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certificate {
    /// The cluster's CA.
    Authority,
    /// The client's certificate.
    Client,
}

impl Certificate {
    /// Its field in Argo CD's `tlsClientConfig`.
    pub fn config_field(self) -> &'static str {
        match self {
            Certificate::Authority => "caData",
            Certificate::Client => "certData",
        }
    }

    /// Its field in a kubeconfig.
    pub fn kubeconfig_field(self) -> &'static str {
        match self {
            Certificate::Authority => "certificate-authority-data",
            Certificate::Client => "client-certificate-data",
        }
    }
}

/// What a connection's CA and client certificates say about `now`, from when each is valid:
/// the one check of certificate lifetimes.
pub fn tls_findings(
    ca: &[Validity],
    cert: &[Validity],
    now: i64,
    days: u32,
) -> Vec<(Certificate, Finding)> {
    let mut out = Vec::new();
    for (which, validities) in [(Certificate::Authority, ca), (Certificate::Client, cert)] {
        for finding in findings(validities, now, days) {
            out.push((which, finding));
        }
    }
    out
}

/// The first time after `now` at which [`tls_findings`] may say something else of these
/// certificates (one becomes valid, enters the warning's `days`, has a day less left, or
/// expires); `None` when nothing they say changes again. A host that keeps what was said
/// until then says the same.
pub fn next_change(validities: &[Validity], now: i64, days: u32) -> Option<i64> {
    validities
        .iter()
        .flat_map(|v| {
            let left = v.not_after - now;
            // `time_left` counts whole days, within the warning's days: it changes when the next
            // day has passed (from the window's very edge, where the warning begins).
            let warned = (0..=i64::from(days) * DAY).contains(&left);
            let next_day = warned.then(|| now + left.rem_euclid(DAY) + 1);
            [
                Some(v.not_before),
                Some(v.not_after - i64::from(days) * DAY),
                Some(v.not_after + 1),
                next_day,
            ]
        })
        .flatten()
        .filter(|&at| at > now)
        .min()
}

/// What the certificates of one field say about `now`: an error for an expired one, a warning
/// for one that expires within `days`, with the date; nothing when every one is valid longer.
fn findings(validities: &[Validity], now: i64, days: u32) -> Vec<Finding> {
    let mut out = Vec::new();
    for validity in validities {
        let left = validity.not_after - now;
        if left < 0 {
            out.push(
                Finding::new(
                    Severity::Error,
                    format!(
                        "the certificate expired on {}: client-go refuses it, and Argo CD cannot reach the cluster",
                        date(validity.not_after)
                    ),
                ),
            );
        } else if left < i64::from(days) * DAY {
            out.push(Finding::new(
                Severity::Warning,
                format!(
                    "the certificate expires on {}, {} (expiryWarningDays={days})",
                    date(validity.not_after),
                    time_left(left)
                ),
            ));
        } else if validity.not_before > now {
            out.push(Finding::new(
                Severity::Warning,
                format!(
                    "the certificate is valid only from {}: client-go refuses it until then",
                    date(validity.not_before)
                ),
            ));
        }
    }
    out
}

/// How long is left of `seconds`, in whole days as a person says it: `in 3 days`, `in 1 day`,
/// `in less than a day`.
pub fn time_left(seconds: i64) -> String {
    match seconds.div_euclid(DAY) {
        ..=0 => "in less than a day".to_string(),
        1 => "in 1 day".to_string(),
        n => format!("in {n} days"),
    }
}

/// A Unix time as its UTC date, `2027-11-21` (Howard Hinnant's days-to-civil algorithm).
pub fn date(unix: i64) -> String {
    let days = unix.div_euclid(DAY);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A Unix time as RFC 3339 in UTC, `2027-11-21T08:30:00Z`.
pub fn instant(unix: i64) -> String {
    let seconds = unix.rem_euclid(DAY);
    let (hour, minute, second) = (seconds / 3_600, seconds / 60 % 60, seconds % 60);
    format!("{}T{hour:02}:{minute:02}:{second:02}Z", date(unix))
}

/// An instant written as RFC 3339 in UTC (`2026-11-24T00:00:00Z`) or a date (`2026-11-24`), as
/// Unix seconds; what hosts take to pin the clock.
pub fn parse_instant(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date_part, time_part) = match text.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t.strip_suffix(['Z', 'z'])?)),
        None => (text, None),
    };
    let mut ymd = date_part.split('-');
    let (year, month, day): (i64, i64, i64) = (
        ymd.next()?.parse().ok()?,
        ymd.next()?.parse().ok()?,
        ymd.next()?.parse().ok()?,
    );
    if ymd.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let seconds = match time_part {
        None => 0,
        Some(t) => {
            let mut hms = t.split(':');
            let (h, m, s): (i64, i64, i64) = (
                hms.next()?.parse().ok()?,
                hms.next()?.parse().ok()?,
                hms.next()?.split('.').next()?.parse().ok()?,
            );
            if hms.next().is_some() || h > 23 || m > 59 || s > 60 {
                return None;
            }
            h * 3_600 + m * 60 + s
        }
    };
    // Days from the civil date (the inverse of `date`).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let instant = days * DAY + seconds;
    (date(instant) == date_part).then_some(instant)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is said of certificates stays the same from any time until `next_change` says it
    /// may not: a planner that keeps it until then says what a plan made afresh says.
    #[test]
    fn what_is_said_holds_until_the_next_change() {
        let start = 1_700_000_000;
        let validities = [
            Validity {
                not_before: start + 10 * DAY,
                not_after: start + 100 * DAY + 3_600,
            },
            Validity {
                not_before: start - DAY,
                not_after: start + 45 * DAY + 17,
            },
        ];
        let said = |now| format!("{:?}", findings(&validities, now, 30));
        let mut now = start - 2 * DAY;
        let mut changes = 0;
        while now < start + 120 * DAY {
            let Some(next) = next_change(&validities, now, 30) else {
                break;
            };
            assert!(next > now);
            for t in [now + 1, (now + next) / 2, next - 1]
                .into_iter()
                .filter(|&t| t < next)
            {
                assert_eq!(said(t), said(now), "at {t}, next change {next}, from {now}");
            }
            changes += usize::from(said(next) != said(now));
            now = next;
        }
        // Becoming valid, entering the window, each day counted down, expiring: all found.
        assert!(changes > 60, "{changes}");
        assert_eq!(next_change(&validities, start + 200 * DAY, 30), None);
    }

    /// Regression: the day counted down was a change for every certificate, near its end or
    /// not, so a planner converted every cluster with a certificate again once a day.
    #[test]
    fn far_from_its_end_a_certificate_says_the_same_until_the_warning_begins() {
        let start = 1_700_000_000;
        let far = [Validity {
            not_before: start - DAY,
            not_after: start + 365 * DAY,
        }];
        assert_eq!(next_change(&far, start, 30), Some(start + 335 * DAY));
    }

    /// Regression: a certificate with a day left was said to expire "in 1 days".
    #[test]
    fn time_left_is_said_as_a_person_says_it() {
        assert_eq!(time_left(3 * DAY + 5), "in 3 days");
        assert_eq!(time_left(DAY), "in 1 day");
        assert_eq!(time_left(2 * DAY - 1), "in 1 day");
        assert_eq!(time_left(DAY - 1), "in less than a day");
        assert_eq!(time_left(0), "in less than a day");
    }

    #[test]
    fn dates_round_trip_and_bad_ones_are_refused() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(parse_instant("2026-11-24T00:00:00Z"), Some(1_795_478_400));
        assert_eq!(date(1_795_478_400), "2026-11-24");
        assert_eq!(parse_instant("2024-02-29"), Some(1_709_164_800));
        assert_eq!(
            parse_instant("2027-11-21T23:14:34Z").map(date).as_deref(),
            Some("2027-11-21")
        );
        for text in [
            "2027-11-21T23:14:34Z",
            "1969-12-31T23:59:59Z",
            "2024-02-29T00:00:00Z",
        ] {
            assert_eq!(parse_instant(text).map(instant).as_deref(), Some(text));
        }
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "2026-11-24T25:00:00Z",
            "yesterday",
            "2026-11-24T00:00:00+01:00",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }
}
