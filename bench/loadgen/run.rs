//! The clients and their attach cycles.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::client::{Answer, CinderClient};
use crate::journal::{Entry, Journal, Outcome};
use crate::report::{OpReport, Report};
use crate::stats::Samples;
use crate::{BenchArgs, BenchMode};

#[derive(Default)]
pub(crate) struct ClientResult {
    ops: BTreeMap<&'static str, Samples>,
    cycles: u64,
    refusals: u64,
    errors: u64,
    unanswered: u64,
    error_samples: Vec<String>,
}

impl ClientResult {
    fn failed(&mut self, err: CycleError) {
        self.errors += 1;
        let what = match err {
            CycleError::Answered(what) => what,
            CycleError::Unanswered(what) => {
                self.unanswered += 1;
                what
            }
        };
        if self.error_samples.len() < 5 {
            self.error_samples.push(what);
        }
    }
}

fn connector(client: usize) -> Value {
    json!({"host": format!("bench-host-{client}"), "initiator": format!("iqn.2004-10.org.bench:{client}"),
           "ip": "10.0.0.1", "platform": "x86_64", "os_type": "linux", "multipath": false,
           "mountpoint": "/dev/vdb"})
}

/// Lifts the project's volume quotas (as the reference Cinder's cinder.conf does with
/// `quota_volumes = -1`), so that the number of clients is not capped by Cinder's default
/// of 10 volumes. Servers without quotas (older builds answer 501) or a caller who may not
/// set them are left as they are.
async fn lift_quota(api: &CinderClient, project: &str) {
    let body = json!({"quota_set": {"volumes": -1, "gigabytes": -1, "snapshots": -1}});
    let path = format!("/os-quota-sets/{project}");
    match api.call(Method::PUT, &path, "3.44", Some(&body)).await {
        Ok(answer) if answer.status == 200 || answer.status == 501 => {}
        Ok(answer) => eprintln!(
            "note: the project's quotas were not lifted ({}); creates may be refused with 413",
            answer.status
        ),
        Err(err) => eprintln!("note: the project's quotas were not lifted: {err}"),
    }
}

/// Creates a volume (of `volume_type` if given) and waits until it is available.
async fn ready_volume(api: &CinderClient, volume_type: Option<&str>) -> Result<String, String> {
    let mut body = json!({"volume": {"size": 1, "name": "bench"}});
    if let Some(t) = volume_type {
        body["volume"]["volume_type"] = json!(t);
    }
    let created = api
        .call(Method::POST, "/volumes", "3.44", Some(&body))
        .await?;
    if created.status != 202 {
        return Err(format!(
            "volume create answered {}: {}",
            created.status, created.body
        ));
    }
    let id = created.body["volume"]["id"]
        .as_str()
        .ok_or("no volume id")?
        .to_owned();
    for _ in 0..600 {
        let shown = api
            .call(Method::GET, &format!("/volumes/{id}"), "3.44", None)
            .await?;
        match shown.body["volume"]["status"].as_str() {
            Some("available") => return Ok(id),
            Some("error") => return Err(format!("volume {id} went to error")),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    Err(format!("volume {id} never became available"))
}

async fn multiattach_type(api: &CinderClient) -> Result<String, String> {
    let name = "bench-multiattach";
    let listed = api.call(Method::GET, "/types", "3.44", None).await?;
    let exists = listed.body["volume_types"]
        .as_array()
        .is_some_and(|types| types.iter().any(|t| t["name"] == name));
    if !exists {
        let body =
            json!({"volume_type": {"name": name, "extra_specs": {"multiattach": "<is> True"}}});
        let created = api
            .call(Method::POST, "/types", "3.44", Some(&body))
            .await?;
        if created.status != 200 {
            return Err(format!(
                "type create answered {}: {}",
                created.status, created.body
            ));
        }
    }
    Ok(name.to_owned())
}

/// Why a cycle stopped early.
pub(crate) enum CycleError {
    /// The server answered with an unexpected status.
    Answered(String),
    /// No answer: what the server did is unknown.
    Unanswered(String),
}

/// Who is running a cycle, and where its requests are written down.
pub(crate) struct Runner<'a> {
    pub(crate) api: &'a CinderClient,
    client: usize,
    pub(crate) volume: &'a str,
    journal: Option<&'a Journal>,
}

impl Runner<'_> {
    /// One attachment request: timed under `op`, journalled, and checked for `expected`.
    pub(crate) async fn step(
        &self,
        result: &mut ClientResult,
        op: (&'static str, &'static str),
        attachment: Option<&str>,
        request: (Method, String, Option<Value>),
        expected: u16,
    ) -> Result<Answer, CycleError> {
        let (method, path, body) = request;
        let started = Instant::now();
        let answer = self.api.call(method, &path, "3.44", body.as_ref()).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let (outcome, status) = match &answer {
            Ok(a) if a.status == expected => (Outcome::Ok, Some(a.status)),
            // Cut off while committing: the change may be stored.
            Ok(a) if a.status == 504 => (Outcome::Unknown, Some(a.status)),
            Ok(a) => (Outcome::Failed, Some(a.status)),
            Err(_) => (Outcome::Unknown, None),
        };
        if let Some(journal) = self.journal {
            let attachment = attachment.map(str::to_owned).or_else(|| {
                answer
                    .as_ref()
                    .ok()
                    .and_then(|a| a.body["attachment"]["id"].as_str().map(str::to_owned))
            });
            journal.record(&Entry {
                client: self.client,
                op: op.1.to_owned(),
                volume: self.volume.to_owned(),
                attachment,
                outcome,
                status,
                elapsed_ms,
                fault: answer.as_ref().ok().and_then(|a| {
                    a.body
                        .as_object()
                        .filter(|_| a.status >= 400)
                        .and_then(|o| o.keys().next().cloned())
                }),
            });
        }
        let answer = answer.map_err(|e| CycleError::Unanswered(format!("{}: {e}", op.0)))?;
        result.ops.entry(op.0).or_default().record(answer.elapsed);
        Ok(answer)
    }

    /// One attach cycle; `Ok(false)` when the reservation was refused by the rules.
    async fn attach_cycle(&self, result: &mut ClientResult) -> Result<bool, CycleError> {
        let body = json!({"attachment": {"volume_uuid": self.volume,
                                         "instance_uuid": Uuid::new_v4().to_string(),
                                         "connector": connector(self.client)}});
        let created = self
            .step(
                result,
                ("attachment_create", "create"),
                None,
                (Method::POST, "/attachments".to_owned(), Some(body)),
                200,
            )
            .await?;
        if created.status == 400 && created.body.to_string().contains("to reserve") {
            return Ok(false);
        }
        expect(&created, 200, "create")?;
        let id = created.body["attachment"]["id"]
            .as_str()
            .ok_or_else(|| CycleError::Answered("no attachment id".to_owned()))?
            .to_owned();
        let completed = self
            .step(
                result,
                ("attachment_complete", "complete"),
                Some(&id),
                (
                    Method::POST,
                    format!("/attachments/{id}/action"),
                    Some(json!({"os-complete": null})),
                ),
                204,
            )
            .await?;
        expect(&completed, 204, "complete")?;
        self.delete(result, &id).await
    }

    async fn delete(&self, result: &mut ClientResult, id: &str) -> Result<bool, CycleError> {
        let deleted = self
            .step(
                result,
                ("attachment_delete", "delete"),
                Some(id),
                (Method::DELETE, format!("/attachments/{id}"), None),
                200,
            )
            .await?;
        expect(&deleted, 200, "delete")?;
        Ok(true)
    }

    /// After an unanswered request the client's own volume may hold an attachment it
    /// does not know of; like a real consumer cleaning up, it deletes whatever is there.
    async fn clear_volume(&self, result: &mut ClientResult) -> Result<(), CycleError> {
        let listed = self
            .step(
                result,
                ("attachment_list", "list"),
                None,
                (
                    Method::GET,
                    format!("/attachments?volume_id={}", self.volume),
                    None,
                ),
                200,
            )
            .await?;
        expect(&listed, 200, "attachment list")?;
        let ids: Vec<String> = listed.body["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["id"].as_str().map(str::to_owned))
            .collect();
        for id in ids {
            self.delete(result, &id).await?;
        }
        Ok(())
    }
}

pub(crate) fn expect(answer: &Answer, status: u16, what: &str) -> Result<(), CycleError> {
    if answer.status == status {
        Ok(())
    } else {
        Err(CycleError::Answered(format!(
            "{what} answered {}: {}",
            answer.status, answer.body
        )))
    }
}

async fn read_round(
    api: &CinderClient,
    volume: &str,
    attachment: &str,
    result: &mut ClientResult,
) -> Result<(), String> {
    let reads = [
        ("volume_show", format!("/volumes/{volume}")),
        (
            "attachment_list",
            format!("/attachments?volume_id={volume}"),
        ),
        ("attachment_show", format!("/attachments/{attachment}")),
    ];
    for (op, path) in reads {
        let answer = api.call(Method::GET, &path, "3.44", None).await?;
        result.ops.entry(op).or_default().record(answer.elapsed);
        if answer.status != 200 {
            return Err(format!("{op} answered {}", answer.status));
        }
    }
    Ok(())
}

/// The pause after the `n`-th refusal in a row: 1 ms doubling up to 64 ms, each drawn
/// at random from half to one and a half times that.
fn refused_backoff(n: u32) -> Duration {
    let base = Duration::from_millis(1 << n.min(6));
    let jitter = (Uuid::new_v4().as_u128() % 1000) as f64 / 1000.0;
    base.mul_f64(0.5 + jitter)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// A client of `project`, with the token asked for or noauth's admin one.
fn client_of(args: &BenchArgs, project: &str) -> CinderClient {
    let token = args
        .token
        .clone()
        .unwrap_or_else(|| format!("bench:{project}"));
    let base = format!("{}/v3/{project}", args.endpoint.trim_end_matches('/'));
    CinderClient::new(base, token, args.service_role)
}

pub async fn run(args: BenchArgs) -> Result<Report, String> {
    if args.project_per_client && args.mode == BenchMode::Shared {
        return Err("--project-per-client: one shared volume cannot be every project's".into());
    }
    // One client per project, or all in one (`apis[client % apis.len()]`).
    let projects: Vec<String> = if args.project_per_client {
        (0..args.clients)
            .map(|n| format!("{}-{n}", args.project))
            .collect()
    } else {
        vec![args.project.clone()]
    };
    let apis: Vec<CinderClient> = projects.iter().map(|p| client_of(&args, p)).collect();
    let api = &apis[0];

    // Set-up, not measured.
    for (api, project) in apis.iter().zip(&projects) {
        lift_quota(api, project).await;
    }
    let shared_type = if args.mode == BenchMode::Shared {
        Some(multiattach_type(api).await?)
    } else {
        None
    };
    let mut volumes = Vec::new();
    let mut attachments = Vec::new();
    let wanted = if args.mode == BenchMode::Shared {
        1
    } else {
        args.clients
    };
    for n in 0..wanted {
        let api = &apis[n % apis.len()];
        volumes.push(ready_volume(api, shared_type.as_deref()).await?);
    }
    if args.mode == BenchMode::Reads {
        for (n, volume) in volumes.iter().enumerate() {
            let api = &apis[n % apis.len()];
            let body = json!({"attachment": {"volume_uuid": volume, "instance_uuid": Uuid::new_v4().to_string()}});
            let created = api
                .call(Method::POST, "/attachments", "3.44", Some(&body))
                .await?;
            attachments.push(
                created.body["attachment"]["id"]
                    .as_str()
                    .ok_or("no attachment id")?
                    .to_owned(),
            );
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = args.server_pid.map(|pid| {
        let (stop, peak) = (stop.clone(), peak_rss.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    });
    let budget = Arc::new(AtomicU64::new(args.cycles.unwrap_or(u64::MAX)));
    let deadline = Instant::now()
        + Duration::from_secs_f64(if args.cycles.is_some() {
            3600.0
        } else {
            args.duration
        });
    let journal = args
        .journal
        .as_deref()
        .map(Journal::create)
        .transpose()?
        .map(Arc::new);
    let cpu = crate::cpu::start(args.server_pid, args.database_process.as_deref());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..args.clients {
        let api = apis[client % apis.len()].clone();
        let volume = volumes[client % volumes.len()].clone();
        let attachment = attachments.get(client).cloned();
        let (budget, mode, journal) = (budget.clone(), args.mode, journal.clone());
        tasks.push(tokio::spawn(async move {
            let runner = Runner {
                api: &api,
                client,
                volume: &volume,
                journal: journal.as_deref(),
            };
            let mut result = ClientResult::default();
            let mut dirty = false;
            let mut refused_in_a_row = 0u32;
            while Instant::now() < deadline {
                if dirty && mode == BenchMode::Own {
                    if let Err(err) = runner.clear_volume(&mut result).await {
                        result.failed(err);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                    dirty = false;
                }
                if budget
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                        left.checked_sub(1)
                    })
                    .is_err()
                {
                    break;
                }
                let outcome = match (&mode, &attachment) {
                    (BenchMode::Reads, Some(attachment)) => {
                        read_round(&api, &volume, attachment, &mut result)
                            .await
                            .map(|()| true)
                            .map_err(CycleError::Answered)
                    }
                    (BenchMode::Volumes, _) => runner.volume_cycle(&mut result).await,
                    (BenchMode::Snapshots, _) => runner.snapshot_cycle(&mut result).await,
                    _ => runner.attach_cycle(&mut result).await,
                };
                if !matches!(outcome, Ok(false)) {
                    refused_in_a_row = 0;
                }
                match outcome {
                    Ok(true) => result.cycles += 1,
                    Ok(false) => {
                        result.refusals += 1;
                        // Refused cycles do not count; try again after a pause that grows
                        // while the refusals go on (with jitter, so a crowd spreads out),
                        // as a consumer that means to get its turn would. A fixed short
                        // pause has the refused crowd drown out the one attach that holds
                        // the volume.
                        budget.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(refused_backoff(refused_in_a_row)).await;
                        refused_in_a_row += 1;
                    }
                    Err(err) => {
                        dirty = true;
                        if matches!(err, CycleError::Unanswered(_)) {
                            // The server is away: do not spin while it comes back.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        result.failed(err);
                    }
                }
            }
            result
        }));
    }
    let mut total = ClientResult::default();
    for task in tasks {
        let result = task.await.map_err(|e| e.to_string())?;
        total.cycles += result.cycles;
        total.refusals += result.refusals;
        total.errors += result.errors;
        total.unanswered += result.unanswered;
        total.error_samples.extend(result.error_samples);
        for (op, samples) in result.ops {
            total.ops.entry(op).or_default().merge(samples);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_per_cycle = cpu.per_cycle(
        args.server_pid,
        args.database_process.as_deref(),
        total.cycles,
    );
    stop.store(true, Ordering::Relaxed);
    if let Some(sampler) = sampler {
        let _ = sampler.await;
    }
    let requests: usize = total.ops.values().map(Samples::len).sum();
    let operations = total
        .ops
        .into_iter()
        .map(|(op, samples)| {
            let (p50_ms, p95_ms, p99_ms, max_ms) = samples.summary();
            (
                op.to_owned(),
                OpReport {
                    count: samples.len(),
                    p50_ms,
                    p95_ms,
                    p99_ms,
                    max_ms,
                },
            )
        })
        .collect();
    let peak = peak_rss.load(Ordering::Relaxed);
    total.error_samples.truncate(5);
    Ok(Report {
        mode: args.mode,
        clients: args.clients,
        seconds,
        cycles: total.cycles,
        cycles_per_s: total.cycles as f64 / seconds,
        requests,
        requests_per_s: requests as f64 / seconds,
        refusals: total.refusals,
        errors: total.errors,
        unanswered: total.unanswered,
        error_samples: total.error_samples,
        operations,
        peak_rss_mib: (peak > 0).then(|| peak as f64 / 1024.0),
        cpu_per_cycle,
    })
}

/// A human-readable table of a report.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_pauses_grow_to_a_cap_with_jitter() {
        for _ in 0..200 {
            let first = refused_backoff(0);
            assert!(first >= Duration::from_micros(500) && first < Duration::from_micros(1500));
            let capped = refused_backoff(30);
            assert!(capped >= Duration::from_millis(32) && capped < Duration::from_millis(96));
        }
        let mean = |n| {
            (0..400)
                .map(|_| refused_backoff(n).as_secs_f64())
                .sum::<f64>()
                / 400.0
        };
        assert!(mean(3) > mean(1) * 2.5, "pauses double");
    }
}
