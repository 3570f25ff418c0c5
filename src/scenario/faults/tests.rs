//! The fault plans' validation, key by key.

use super::*;

fn raw(kind: &str) -> RawFault {
    RawFault {
        kind: kind.into(),
        point: None,
        probability: None,
        every: None,
        at: None,
        rate: None,
        limit: None,
        workers: None,
        duration: None,
        respawn_after: None,
        identity: None,
        rows: None,
        mode: None,
        hold: None,
        interval: None,
        agents: None,
        delay: None,
        jitter: None,
        percent: None,
        lose: None,
        then: None,
    }
}

#[test]
fn job_types_spread_over_ids() {
    let t = RawJobType { name: "p".into(), count: 2, fail_probability: 0.0, fail_code: "TIMEOUT".into(), poison: true };
    let (_, ids) = job_types(&[t], 100).unwrap();
    let mut v: Vec<i64> = ids.keys().copied().collect();
    v.sort();
    assert_eq!(v, [26, 76]);
}

#[test]
fn crash_needs_a_point_and_a_per_job_trigger() {
    let g = groups(&[], 2).unwrap();
    let mut f = raw("crash");
    f.probability = Some(0.01);
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("point"));
    f.point = Some("after_claim".into());
    assert!(matches!(fault(0, &f, &g, 2).unwrap().kind, Kind::Crash { .. }));
    f.point = Some("later".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("accepted: after_claim"));
}

#[test]
fn targets_resolve_to_worker_ids() {
    let g = groups(&[RawGroup { name: "a".into(), count: 2 }, RawGroup { name: "b".into(), count: 1 }], 3).unwrap();
    let mut f = raw("pause");
    f.at = Some("1s".into());
    f.duration = Some("2s".into());
    f.workers = Some("b".into());
    assert_eq!(fault(0, &f, &g, 3).unwrap().workers, [3]);
    f.workers = Some("w2".into());
    assert_eq!(fault(0, &f, &g, 3).unwrap().workers, [2]);
    f.workers = Some("w9".into());
    assert!(fault(0, &f, &g, 3).is_err());
    assert!(groups(&[RawGroup { name: "a".into(), count: 2 }], 3).is_err());
}

#[test]
fn postgres_restart_fires_at_a_time_with_a_mode() {
    let g = groups(&[], 1).unwrap();
    let mut f = raw("postgres_restart");
    f.every = Some(3);
    assert!(fault(0, &f, &g, 1).unwrap_err().to_string().contains("at a time"));
    f.every = None;
    f.at = Some("2s".into());
    assert_eq!(fault(0, &f, &g, 1).unwrap().kind, Kind::PostgresRestart { immediate: true, down: Duration::ZERO });
    f.mode = Some("fast".into());
    f.duration = Some("1s".into());
    let down = Duration::from_secs(1);
    assert_eq!(fault(0, &f, &g, 1).unwrap().kind, Kind::PostgresRestart { immediate: false, down });
    f.mode = Some("smart".into());
    assert!(fault(0, &f, &g, 1).unwrap_err().to_string().contains("accepted: immediate, fast"));
    let mut k = raw("kill_backend");
    k.at = Some("1s".into());
    k.mode = Some("fast".into());
    assert!(fault(0, &k, &g, 1).unwrap_err().to_string().contains("only to kind"));
}

#[test]
fn failover_fires_once_at_a_time_with_a_hold() {
    let g = groups(&[], 2).unwrap();
    let mut f = raw("failover");
    f.rate = Some(1.0);
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("at a time"));
    f.rate = None;
    f.at = Some("2s".into());
    assert_eq!(fault(0, &f, &g, 2).unwrap().kind, Kind::Failover { hold: Duration::ZERO });
    f.hold = Some("1500ms".into());
    assert_eq!(fault(0, &f, &g, 2).unwrap().kind, Kind::Failover { hold: Duration::from_millis(1500) });
    f.duration = Some("1s".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("takes at and hold"));
    let mut p = raw("pause");
    p.at = Some("1s".into());
    p.duration = Some("1s".into());
    p.hold = Some("1s".into());
    assert!(fault(0, &p, &g, 2).unwrap_err().to_string().contains("hold applies only"));
}

#[test]
fn network_faults_fire_at_a_time_on_agents_with_their_own_keys() {
    let g = groups(&[], 2).unwrap();
    let mut f = raw("partition");
    f.at = Some("1s".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("needs duration"));
    f.duration = Some("10s".into());
    f.agents = Some(vec![2]);
    let p = fault(0, &f, &g, 2).unwrap();
    assert_eq!((p.kind.name(), p.agents.as_slice()), ("partition", &[2][..]));
    f.agents = Some(vec![0]);
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("agent numbers from 1"));
    f.agents = None;
    f.workers = Some("w1".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("hits agents, not workers"));
    f.workers = None;
    f.delay = Some("5ms".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("delay applies only"));
    f.kind = "latency".into();
    f.jitter = Some("6ms".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("jitter must not exceed delay"));
    f.jitter = Some("2ms".into());
    let delay = Duration::from_millis(5);
    let effect = NetEffect::Latency { delay, jitter: Duration::from_millis(2) };
    assert_eq!(fault(0, &f, &g, 2).unwrap().kind, Kind::Network { effect, duration: Duration::from_secs(10) });
    let mut l = raw("loss");
    l.at = Some("1s".into());
    l.duration = Some("1s".into());
    assert!(fault(0, &l, &g, 2).unwrap_err().to_string().contains("needs percent"));
    l.percent = Some(2.5);
    assert!(
        matches!(fault(0, &l, &g, 2).unwrap().kind, Kind::Network { effect: NetEffect::Loss { share }, .. } if share == 0.025)
    );
    l.at = None;
    l.rate = Some(1.0);
    assert!(fault(0, &l, &g, 2).unwrap_err().to_string().contains("once at a time"));
    let mut k = raw("kill_backend");
    k.at = Some("1s".into());
    k.agents = Some(vec![1]);
    assert!(fault(0, &k, &g, 2).unwrap_err().to_string().contains("only to the kinds that act on agents"));
}

#[test]
fn kill_agent_fires_once_at_a_time_on_named_agents() {
    let g = groups(&[], 4).unwrap();
    let mut f = raw("kill_agent");
    f.at = Some("2s".into());
    assert!(fault(0, &f, &g, 4).unwrap_err().to_string().contains("needs agents"));
    f.agents = Some(vec![2]);
    let k = fault(0, &f, &g, 4).unwrap();
    assert_eq!((k.kind.kind(), k.agents.as_slice()), (FaultKind::KillAgent, &[2][..]));
    f.workers = Some("w1".into());
    assert!(fault(0, &f, &g, 4).unwrap_err().to_string().contains("kills agents, not workers"));
    f.workers = None;
    f.duration = Some("1s".into());
    assert!(fault(0, &f, &g, 4).unwrap_err().to_string().contains("no duration"));
    f.duration = None;
    f.at = None;
    f.rate = Some(1.0);
    assert!(fault(0, &f, &g, 4).unwrap_err().to_string().contains("once at a time"));
}

#[test]
fn an_unknown_or_recorded_only_kind_lists_the_accepted_ones_from_all() {
    let g = groups(&[], 1).unwrap();
    for name in ["meteor", "poison", "exit"] {
        let mut f = raw(name);
        f.at = Some("1s".into());
        let e = fault(0, &f, &g, 1).unwrap_err().to_string();
        assert!(e.contains(&format!("accepted: {}", FaultKind::accepted())), "{e}");
        assert!(e.contains("kill_agent") && !e.contains("accepted: crash, pause, kill_backend, lock_hold, poison"));
    }
}

#[test]
fn ack_lost_fires_per_job_without_a_point_and_names_what_is_lost_and_what_follows() {
    let g = groups(&[], 2).unwrap();
    let mut f = raw("ack_lost");
    f.at = Some("1s".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("fires per job"));
    f.at = None;
    f.every = Some(3);
    let plain = Kind::AckLost { lose: Lose::Answer, then: AfterLoss::Resend };
    assert_eq!(fault(0, &f, &g, 2).unwrap().kind, plain);
    f.lose = Some("request".into());
    f.then = Some("lease".into());
    assert_eq!(fault(0, &f, &g, 2).unwrap().kind, Kind::AckLost { lose: Lose::Request, then: AfterLoss::Lease });
    f.then = Some("never".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("accepted: resend, lease"));
    f.then = None;
    f.point = Some("after_claim".into());
    assert!(fault(0, &f, &g, 2).unwrap_err().to_string().contains("takes no point"));
    let mut c = raw("crash");
    c.every = Some(2);
    c.point = Some("after_claim".into());
    c.then = Some("lease".into());
    assert!(fault(0, &c, &g, 2).unwrap_err().to_string().contains("apply only to kind = \"ack_lost\""));
}

#[test]
fn exactly_one_trigger() {
    let g = groups(&[], 1).unwrap();
    let mut f = raw("kill_backend");
    assert!(fault(0, &f, &g, 1).is_err());
    f.rate = Some(2.0);
    assert_eq!(fault(0, &f, &g, 1).unwrap().trigger, Trigger::Rate(2.0));
    f.at = Some("1s".into());
    assert!(fault(0, &f, &g, 1).is_err());
}
