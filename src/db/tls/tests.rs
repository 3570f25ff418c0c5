use super::*;

#[test]
fn split_takes_only_the_tls_parameters() {
    let s = split("postgres://u:p@h:5432/db?application_name=x&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem");
    assert_eq!(s.rest, "postgres://u:p@h:5432/db?application_name=x");
    assert_eq!(s.params, vec![(Param::Mode, "verify-full".to_string()), (Param::RootCert, "/tmp/ca.pem".to_string())]);
    let s = split("host=h sslmode=require user=u");
    assert_eq!(s.rest, "host=h user=u");
    assert_eq!(s.params, vec![(Param::Mode, "require".to_string())]);
    assert_eq!(split("postgres://h/db").rest, "postgres://h/db");
}

#[test]
fn the_url_wins_over_the_environment() {
    let env = |name: &str| (name == "PGSSLMODE").then(|| "bogus".to_string());
    let e = Tls::resolve_with(&[], env).unwrap_err();
    assert!(matches!(&e, TlsSetting::UnknownMode { from, .. } if from == "PGSSLMODE (environment)"), "{e}");
    assert!(e.to_string().contains(MODES), "{e}");
    let tls = Tls::resolve_with(&[(Param::Mode, "require".into())], env).unwrap();
    assert_eq!(tls.mode, SslMode::Require);
    assert_eq!(Tls::resolve_with(&[], |_| None).unwrap().mode, SslMode::Prefer);
}

#[test]
fn a_child_process_is_handed_the_same_settings_in_its_url() {
    let dir = tempfile::tempdir().unwrap();
    let none = |_: &str| None;
    // Nothing given: nothing added (the child defaults to prefer as the run did).
    assert_eq!(Tls::resolve_with(&[], none).unwrap().add_to("postgres://u@h/db".into()), "postgres://u@h/db");
    let require = Tls::resolve_with(&[(Param::Mode, "require".into())], none).unwrap();
    assert_eq!(require.add_to("postgres://u@h/db".into()), "postgres://u@h/db?sslmode=require");
    let disable = Tls::resolve_with(&[(Param::Mode, "disable".into())], none).unwrap();
    assert_eq!(disable.add_to("postgres://u@/db?host=%2Ftmp".into()), "postgres://u@/db?host=%2Ftmp&sslmode=disable");
    // require with a root file behaves as verify-ca, and the child is told so.
    let ca = dir.path().join("ca.pem");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let given = [(Param::Mode, "require".into()), (Param::RootCert, ca.display().to_string())];
    let tls = Tls::resolve_with(&given, none).unwrap();
    assert_eq!(tls.checks, Checks::Chain);
    assert_eq!(
        tls.add_to("postgres://u@h/db".into()),
        format!("postgres://u@h/db?sslmode=verify-ca&sslrootcert={}", ca.display())
    );
}

#[test]
fn libpqs_default_root_file_is_used_when_it_exists() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().display().to_string();
    let env = |name: &str| (name == "HOME").then(|| h.clone());
    let verify = [(Param::Mode, "verify-full".to_string())];
    let e = Tls::resolve_with(&verify, env).unwrap_err();
    assert!(e.to_string().contains(&format!("{h}/.postgresql/root.crt")), "{e}");
    std::fs::create_dir(home.path().join(".postgresql")).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(home.path().join(".postgresql/root.crt"), params.self_signed(&key).unwrap().pem()).unwrap();
    let tls = Tls::resolve_with(&verify, env).unwrap();
    assert_eq!((tls.checks, tls.root.map(|r| r.1)), (Checks::ChainAndName, Some(Source::Default(Param::RootCert))));
    let require = Tls::resolve_with(&[(Param::Mode, "require".into())], env).unwrap();
    assert_eq!(require.checks, Checks::Chain, "require with a root file checks the chain, as libpq");
    let prefer = Tls::resolve_with(&[], env).unwrap();
    assert_eq!(prefer.checks, Checks::Nothing);
}

#[test]
fn a_missing_root_file_names_itself_and_its_parameter() {
    let e = Tls::resolve_with(
        &[(Param::Mode, "verify-ca".into()), (Param::RootCert, "/nonexistent/ca.pem".into())],
        |_| None,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("/nonexistent/ca.pem") && text.contains("sslrootcert in the URL"), "{text}");
}
