//! What the docs promise, kept (issue 35, item 5): `--schema` refusals that hold with
//! `--reuse`, a `--pooler-url` judged by the pool mode it declares (and the mode checked), a
//! change of server in URL mode reported as one, and a value never measured printed as
//! unknown. Each test here failed on 0.2.0's behaviour.

use crate::common;
use common::pg::ScratchDb;
use common::{bin, repo};

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `--schema public --reuse` and `--schema information_schema --reuse` ran (and installed
/// queuebench's tables in `public`); both are refused with exit 2, nothing changed.
#[test]
fn shared_schemas_are_refused_even_with_reuse() {
    let db = ScratchDb::new("sharedschema");
    db.sql("CREATE TABLE public.app_rows (id int); INSERT INTO public.app_rows VALUES (1)");
    let before = db.sql("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace");
    let s = repo("scenarios/skip-locked.toml");
    for schema in ["public", "information_schema"] {
        let cwd = tempfile::tempdir().unwrap();
        let o = bin()
            .args(["run", s.to_str().unwrap(), "--database-url", &db.url, "--schema", schema, "--reuse"])
            .args(["--set", "jobs.preload=50", "--quiet"])
            .current_dir(cwd.path())
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "--schema {schema} --reuse: {}", text(&o));
        assert!(text(&o).contains(&format!("`{schema}` is a schema the database itself")), "{}", text(&o));
        assert!(std::fs::read_dir(cwd.path()).unwrap().next().is_none(), "--schema {schema}: a folder was made");
    }
    let after = db.sql("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace");
    assert_eq!(before, after, "nothing was created in public");
    assert_eq!(db.sql("SELECT count(*) FROM public.app_rows").trim(), "1");
}

