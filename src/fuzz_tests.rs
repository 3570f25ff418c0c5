//! Property tests of every parser that takes user input: scenario text,
//! `--set` overrides, expectations, durations, strategy SQL, and connection
//! URLs and password files (where the property also says: the password never
//! shows in what is printed). Any input
//! must give a value or an error, never a panic. Seeded, so a failure
//! reproduces; the case counts are in the README.

use crate::scenario::load::{Source, apply_override, parse_text};
use crate::scenario::validate::validate;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const SCENARIO: &str = include_str!("../scenarios/gc-pause-fencing-token.toml");
const OPEN: &str = include_str!("../scenarios/open-model-overload.toml");
const ALPHABET: &[u8] = b"abz09_.-=\"'[]{}#\n \t:,<>!$*/\\";

fn mutate(rng: &mut StdRng, text: &str) -> String {
    let mut bytes: Vec<u8> = text.as_bytes().to_vec();
    for _ in 0..rng.random_range(1..8) {
        if bytes.is_empty() {
            break;
        }
        let i = rng.random_range(0..bytes.len());
        match rng.random_range(0..4) {
            0 => bytes[i] = ALPHABET[rng.random_range(0..ALPHABET.len())],
            1 => {
                bytes.remove(i);
            }
            2 => bytes.insert(i, ALPHABET[rng.random_range(0..ALPHABET.len())]),
            _ => {
                let j = rng.random_range(i..bytes.len().min(i + 40));
                bytes.drain(i..j);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn random_text(rng: &mut StdRng, max: usize) -> String {
    let n = rng.random_range(0..max);
    (0..n).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

pub(crate) const SCENARIO_CASES: usize = 5_000;
pub(crate) const SET_CASES: usize = 5_000;
pub(crate) const EXPECT_CASES: usize = 5_000;
pub(crate) const SQL_CASES: usize = 5_000;
pub(crate) const URL_CASES: usize = 5_000;

#[test]
fn scenario_files_never_panic() {
    let mut rng = StdRng::seed_from_u64(1);
    for i in 0..SCENARIO_CASES {
        let base = if i % 2 == 0 { SCENARIO } else { OPEN };
        let text = mutate(&mut rng, base);
        if let Ok(raw) = parse_text(&text) {
            let source = Source { path: "fuzz.toml".into(), text: text.clone(), overrides: vec![] };
            let _ = validate(raw, source, Some(1));
        }
    }
}

#[test]
fn set_overrides_never_panic() {
    let mut rng = StdRng::seed_from_u64(2);
    let keys = ["workers.count", "lease.duration", "expect.\"jobs.lost\"", "run.phases", "faults", "a..b", "\"x", ""];
    for _ in 0..SET_CASES {
        let mut table: toml::Table = toml::from_str(SCENARIO).unwrap();
        // Mostly real paths, sometimes a random one (dots, quotes, brackets, empty segments).
        let random_key = random_text(&mut rng, 16);
        let key = if rng.random_bool(0.25) { random_key.as_str() } else { keys[rng.random_range(0..keys.len())] };
        let set = format!("{key}{}{}", if rng.random_bool(0.8) { "=" } else { "" }, random_text(&mut rng, 20));
        if apply_override(&mut table, &set).is_ok() {
            let text = toml::to_string(&table).unwrap_or_default();
            if let Ok(raw) = parse_text(&text) {
                let _ = validate(raw, Source { path: "f".into(), text, overrides: vec![set] }, Some(1));
            }
        }
    }
}

#[test]
fn expectations_and_durations_never_panic() {
    let mut rng = StdRng::seed_from_u64(3);
    let names = crate::model::summary::RunSummary::metric_names(&[], &[], &[]);
    let ops = ["==", "!=", "<", "<=", ">", ">=", "", "=>", "< -"];
    for _ in 0..EXPECT_CASES {
        let expr = format!("{}{}", ops[rng.random_range(0..ops.len())], random_text(&mut rng, 12));
        let metric = if rng.random_bool(0.5) {
            names[rng.random_range(0..names.len())].clone()
        } else {
            random_text(&mut rng, 20)
        };
        let _ = crate::model::expect::parse_expectation(&metric, &expr, &names);
        let _ = crate::scenario::units::parse_duration(&random_text(&mut rng, 10));
        let _ = crate::scenario::units::parse_duration(&format!(
            "{}{}",
            rng.random::<f64>() * 1e12,
            ["ms", "s", "h", "x"][rng.random_range(0..4)]
        ));
    }
}

#[test]
fn strategy_sql_translation_never_panics() {
    let mut rng = StdRng::seed_from_u64(4);
    let claim = include_str!("adapter/sql/skip-locked.claim.sql");
    for _ in 0..SQL_CASES {
        let text = mutate(&mut rng, claim);
        let _ = crate::adapter::params::translate(&text, &crate::adapter::params::ALL);
    }
}

#[test]
fn urls_and_password_files_never_panic_and_never_show_the_password() {
    let mut rng = StdRng::seed_from_u64(5);
    let shapes = [
        "postgres://alice:PW@127.0.0.1:5432/db",
        "postgresql://alice:PW@/db?host=/tmp&port=5433",
        "host=localhost user=alice password=PW dbname=db",
        "host=localhost user=alice password='PW' dbname=db",
    ];
    for _ in 0..URL_CASES {
        // A password of 12 lower-case letters: it does not occur by chance elsewhere.
        let pw: String = (0..12).map(|_| (b'a' + rng.random_range(0..26u8)) as char).collect();
        let shape = shapes[rng.random_range(0..shapes.len())].replace("PW", &pw);
        let url = mutate(&mut rng, &shape);
        if let Ok(config) = url.parse::<tokio_postgres::Config>()
            && let Some(given) = config.get_password().map(|p| String::from_utf8_lossy(p).into_owned())
        {
            // A mutation can move the password's text into another field (user=alicepassword=…):
            // then it is that field's text, not a password, and is shown as such.
            let hosts = format!("{:?}", config.get_hosts());
            let elsewhere = [config.get_user().unwrap_or(""), config.get_dbname().unwrap_or(""), &hosts]
                .iter()
                .any(|f| f.contains(&given));
            // A password cut to a few letters occurs in any text by chance (`b` in "database").
            if given.len() >= 6 && !elsewhere {
                let shown = crate::db::password::display_url(&config);
                assert!(!shown.contains(&given), "{url} → {shown}");
                assert!(!crate::db::describe(&config).contains(&given), "{url}");
            }
        }
        let line = mutate(&mut rng, &format!("localhost:5432:db:alice:{pw}\n*:*:*:*:other"));
        let _ = crate::db::password::pgpass_lookup(&line, "localhost", 5432, "db", "alice");
    }
}
