//! The `host-server` binary: command line, startup, serving, graceful shutdown.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use engine::Store;
use engine::{Engine, EngineOptions};
use host_server::{
    app, ensure_site, open_engine, open_engine_postgres, ClientAddr, Config, LoginLimits,
    PerAddress, PgOptions, ServerError, SiteInit, SqliteOptions, StreamLimits, SyncMode, WriteMode,
    ADMIN_LOGIN,
};
use tracing::{error, info, warn};

/// mimalloc: the engine allocates many small JSON values per request on several threads, where
/// glibc malloc showed up as a quarter of the CPU profile of listing requests.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve the Plone-REST-API-compatible content engine over HTTP, stored in SQLite (or, with
/// --database, in PostgreSQL shared by several servers).
#[derive(Debug, Parser)]
#[command(
    name = "host-server",
    version,
    after_help = "ENVIRONMENT:\n  \
        ADMIN_PASSWORD  Password of the `admin` user created on first start (when the data\n                  \
        directory holds no site yet); at least 8 characters, as for every password.\n                  \
        Without it a random password is generated and printed once to stdout.\n                  \
        Ignored once the site exists.\n  \
        RUST_LOG        Log filter, used when --log is not given.\n  \
        WEBHOOK_ALLOW   Internal webhook destinations allowed (--webhook-allow).\n\n\
        OUTPUT:\n  \
        stdout carries only the generated admin password (first start only) and the line\n  \
        `listening on http://ADDR` once the socket is bound (preceded, with\n  \
        --metrics-listen, by `metrics on http://ADDR`); logs go to stderr.\n\n\
        SIGNALS:\n  \
        SIGINT / SIGTERM stop accepting connections, let requests in flight finish (at most\n  30 s) and exit 0."
)]
struct Cli {
    /// Address to listen on (HOST:PORT). Port 0 picks a free port; the line printed on stdout
    /// tells which.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,

    /// Data directory, created if missing. The database is DIR/site.sqlite3 (with its -wal and
    /// -shm files); DIR/site.sqlite3.lock keeps a second server off the same directory.
    #[arg(long, value_name = "DIR", default_value = "./var")]
    data: PathBuf,

    /// Store the site in this PostgreSQL database instead of SQLite in --data
    /// (`postgres://USER:PASSWORD@HOST:PORT/DBNAME`, or `postgres://USER@%2Frun%2Fpostgresql/DBNAME`
    /// for the Unix socket in /run/postgresql). Several servers may share one database (behind a load balancer);
    /// all of them should use the same --write-mode. The table `kv` is created when missing.
    #[arg(long, value_name = "URL", conflicts_with = "data")]
    database: Option<String>,

    /// With --database: answer read requests from this PostgreSQL read replica (a hot standby
    /// of --database, e.g. by streaming replication). A client reads its own writes: every
    /// write answers with a cookie `rw-generation` holding the store generation it reached, and
    /// a read carrying it runs on the primary while the replica is behind that generation.
    #[arg(long, value_name = "URL", requires = "database")]
    read_database: Option<String>,

    /// With --database: most PostgreSQL connections this server opens.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(4..=1000))]
    database_connections: u16,

    /// With --database: how the writes of several servers are kept apart. `locked`: one
    /// writer at a time across all servers (an advisory lock), never a conflict. `optimistic`:
    /// SERIALIZABLE transactions side by side, a request that conflicts runs again after a
    /// pause (see --conflict-attempts, --conflict-pause-ms, --conflict-alone-after).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = WriteMode::Locked)]
    write_mode: WriteMode,

    /// With --database: most runs of a request that meets store conflicts (the first
    /// included); the last conflict answers 503 Busy.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u16).range(1..=100))]
    conflict_attempts: u16,

    /// With --database: longest pause before re-running a request that met a store conflict,
    /// in milliseconds (the pause starts at about 1 ms, doubles per conflict, half of it
    /// random); 0 re-runs at once.
    #[arg(long, value_name = "MS", default_value_t = 50,
          value_parser = clap::value_parser!(u16).range(0..=10_000))]
    conflict_pause_ms: u16,

    /// With --write-mode optimistic: after this many conflicting runs of one request, its next
    /// run waits for the writers in flight and runs with no other writer beside it (every
    /// writer then holds a shared advisory lock, one round trip more per write); 0 never.
    #[arg(long, value_name = "N", default_value_t = 2)]
    conflict_alone_after: u16,

    /// Public base URL of the site (e.g. https://cms.example.org), used in every `@id`. Without
    /// it, each request's Host header decides (or its X-Forwarded-Proto / X-Forwarded-Host
    /// headers, with --trust-forwarded).
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,

    /// Take the base URL from X-Forwarded-Proto / X-Forwarded-Host, and the client's address
    /// (for the login throttle) from the last X-Forwarded-For entry: set this behind a reverse
    /// proxy that sets those headers. Off by default (as in Zope), since any client can send them.
    #[arg(long)]
    trust_forwarded: bool,

    /// Allow cross-origin requests from ORIGIN (e.g. http://localhost:3000, or `*` for any).
    /// Repeat for several origins. Without it no CORS headers are sent.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    cors_origins: Vec<String>,

    /// Number of SQLite reader connections (concurrent read requests); writes are serialized
    /// on one separate connection.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    readers: u16,

    /// Commit durability. `full`: every acknowledged write is fsynced and survives a crash or
    /// power loss. `normal`: faster; survives the process being killed, but the last writes
    /// may be lost if the machine crashes or loses power.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = SyncMode::Full)]
    sync: SyncMode,

    /// A profile. `nick`: the site answers as Nick 2.8 does where Nick and Plone differ (chosen
    /// when the site is created and stored with it; refused on an existing site created
    /// without it). Installable: `multilingual` (translations between the site's languages) or
    /// `multilingual-content` (the same, plus one language root folder `/<code>/` per language,
    /// each a navigation root), applied when the site is created and, on an existing site, at
    /// every start (installing is idempotent), so adding the flag later enables it. Repeatable.
    #[arg(long = "profile", value_name = "PROFILE", value_parser = ["nick", "multilingual", "multilingual-content"])]
    profiles: Vec<String>,

    /// The site's languages, comma-separated, the first being the default (e.g. `en,de`). Used
    /// with `--profile`; without it a new site is English only.
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    languages: Vec<String>,

    /// FOR CONTRACT TESTS ONLY — NEVER IN PRODUCTION: fixed clock (movable over HTTP via
    /// @test-clock), predictable ids and secrets, weak password hashing.
    #[arg(long)]
    deterministic: bool,

    /// The sentence-embedding model behind `@related`: a directory with `model.safetensors` and
    /// `tokenizer.json` (a static model, see scripts/prepare-embedding-model.sh), or `test` for
    /// the deterministic test embedder (contract tests). Without it, `@related` answers 400 "AI is
    /// disabled.".
    #[arg(long, value_name = "DIR|test")]
    embedding_model: Option<String>,

    /// The language model behind `@chat` and `@generate`: base URL of an Ollama server
    /// (`http://127.0.0.1:11434`) or of an OpenAI-compatible API (`http://host:8000/v1`, with
    /// `--llm-api openai`); plain HTTP. Its key, if any, comes from the environment variable
    /// LLM_API_KEY. Without it, both answer 400 "AI is disabled.".
    #[arg(long, value_name = "URL")]
    llm_url: Option<String>,

    /// The protocol of `--llm-url`.
    #[arg(long, value_enum, value_name = "API", default_value_t = host_server::llm::LlmApi::Ollama)]
    llm_api: host_server::llm::LlmApi,

    /// The model to ask at `--llm-url`.
    #[arg(long, value_name = "NAME", default_value = "qwen3")]
    llm_model: String,

    /// Memory (MiB) for answers to repeated GET requests, reused until a write changes
    /// something they were computed from (answers that depend on the time: for one second at
    /// most); 0 turns the cache off. Default 64; with --database 0 (a value given here is used
    /// anyway: every request then checks the database's generation before a cached answer is
    /// used, so another server's writes are seen).
    #[arg(long, value_name = "MIB")]
    response_cache_mb: Option<usize>,

    /// Run read requests on a separate thread pool instead of the async workers (for slow
    /// disks, where one read waiting on I/O should not hold up other connections).
    #[arg(long)]
    blocking_reads: bool,

    /// Async worker threads (default: one per core). Not in the help: for measuring the
    /// runtime's settings (bench/RESULTS.md, "The fixed cost of a request").
    #[arg(long, value_name = "N", hide = true)]
    runtime_workers: Option<std::num::NonZeroUsize>,

    /// Tasks a worker polls between two looks for socket events (tokio's `event_interval`,
    /// default 61). Not in the help: for measuring the runtime's settings.
    #[arg(long, value_name = "N", hide = true)]
    runtime_event_interval: Option<NonZeroU32>,

    /// Tasks a worker polls between two looks at the shared queue (tokio's
    /// `global_queue_interval`, default 31 or adaptive). Not in the help: for measuring.
    #[arg(long, value_name = "N", hide = true)]
    runtime_global_queue_interval: Option<NonZeroU32>,

    /// Run the work of write requests on the threads serving their connections, each against a
    /// snapshot of its own, so that only their commits are serial (SQLite only; see the README's
    /// "Writes"). Off by default: on 2 cores it measured slower than the one writer thread.
    #[arg(long, conflicts_with = "database")]
    parallel_writes: bool,

    /// Seconds a new connection gets to send its first request's headers, and any connection to
    /// send a request's headers once their first byte came; a slower or silent one (slowloris)
    /// is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_timeout: u64,

    /// Seconds a client may pause while sending a request body (the wait for each next piece,
    /// not for the whole body, so long uploads are fine); then the request fails with a 400.
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_timeout: u64,

    /// Seconds a connection may stay open between requests (keep-alive idle, after its first
    /// answer); then the server closes it.
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    idle_timeout: u64,

    /// Most client connections open at once; further ones wait in the listen queue until one
    /// closes (they hold none of the server's file descriptors meanwhile). The server raises its
    /// open-file limit to fit at start, or lowers this to fit the limit (with a warning).
    #[arg(long, value_name = "N", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,

    /// Most connections open at once from one client address; a further one is closed at once.
    /// Not applied with --trust-forwarded (every connection then comes from the proxy, which
    /// should limit its clients itself).
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections_per_address: u32,

    /// Most change feed event streams (`@changes` with `Accept: text/event-stream`) open at
    /// once; a further one is answered 429.
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    max_streams: u32,

    /// Most event streams open at once from one client address.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    max_streams_per_address: u32,

    /// Most event streams of anonymous callers open at once, from all addresses (0: anonymous
    /// callers cannot follow the feed as a stream; they can still read its pages).
    #[arg(long, value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    max_anonymous_streams: u32,

    /// Failed password attempts (`@login`, HTTP Basic) allowed per login from one client
    /// address per minute (also the burst); past it that login is answered 429 with Retry-After,
    /// from that address only, until the budget refills. Successful logins never count.
    #[arg(long, value_name = "N", default_value_t = NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN))]
    login_failures_per_login: NonZeroU32,

    /// Failed password attempts allowed per client address per minute (also the burst), over
    /// all logins (a looser bound); past it that address is answered 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = NonZeroU32::new(60).unwrap_or(NonZeroU32::MIN))]
    login_failures_per_address: NonZeroU32,

    /// Webhook destinations allowed although internal (loopback, private, link-local,
    /// metadata, ...; refused otherwise): addresses or CIDR ranges, comma-separated, e.g.
    /// `127.0.0.1,10.1.0.0/16`.
    #[arg(long, value_name = "LIST", env = "WEBHOOK_ALLOW", default_value = "",
          value_parser = parse_destinations)]
    webhook_allow: engine::DestinationPolicy,

    /// Log level or filter (error, warn, info, debug, trace, or e.g. `info,tower_http=debug`).
    #[arg(long, value_name = "LEVEL", env = "RUST_LOG", default_value = "info")]
    log: String,

    /// How log lines are written to stderr: `text` (for people) or `json` (one JSON object a
    /// line, for log collectors; a request's lines carry its `request_id`, also sent back in the
    /// `X-Request-Id` header).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,

    /// Serve metrics in the Prometheus text format at `http://ADDR/metrics` (HOST:PORT; port 0
    /// picks a free port, printed on stdout as `metrics on http://ADDR` before the `listening
    /// on` line). Off by default; keep ADDR private (e.g. 127.0.0.1:9090).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,

    /// Single sign-on: a TOML file of OpenID Connect providers (`[[provider]]` tables: id,
    /// title, issuer, client_id, client_secret or client_secret_env, scopes, redirect_uri,
    /// claims.login/fullname/email/groups, link_existing_users; see the README). `GET @login`
    /// lists them and `@login-oidc/<id>` logs in through them.
    #[arg(long, value_name = "FILE", env = "OIDC_CONFIG")]
    oidc_config: Option<PathBuf>,

    /// Refuse password login (`POST @login` answers 403, HTTP Basic 401): people log in
    /// through the `--oidc-config` providers only. Tokens already issued keep working.
    #[arg(long, requires = "oidc_config")]
    no_password_login: bool,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// `--webhook-allow`: the destination policy's allow-list.
fn parse_destinations(s: &str) -> Result<engine::DestinationPolicy, String> {
    engine::DestinationPolicy::parse(s)
}

/// How the accept loop treats connections (see [`Cli`]).
#[derive(Debug, Clone, Copy)]
struct Limits {
    header_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
    /// `None`: no limit per address (behind a trusted proxy).
    max_connections_per_address: Option<usize>,
}

/// `host-server reindex --data DIR`: rebuild the catalog of the site in DIR and exit.
#[derive(Parser, Debug)]
#[command(
    name = "host-server reindex",
    bin_name = "host-server reindex",
    about = "Rebuild the catalog (search index) of the site in DIR from its content, in one \
             transaction, logging progress; the server must not be running on DIR"
)]
struct ReindexCli {
    /// Data directory of the site.
    #[arg(long, value_name = "DIR", default_value = "./var")]
    data: PathBuf,

    /// Log level or filter.
    #[arg(long, value_name = "LEVEL", env = "RUST_LOG", default_value = "info")]
    log: String,
}

fn reindex(cli: ReindexCli) -> Result<(), ServerError> {
    let mut options = EngineOptions::production();
    let progress: engine::ErrorLog = Arc::new(|line: &str| {
        info!("{line}");
    });
    options.progress_log = Some(progress.clone());
    let engine = open_engine(&cli.data, SqliteOptions::default(), options)?;
    let started = std::time::Instant::now();
    let n = engine
        .rebuild_catalog(&mut |n| progress(&format!("catalog: {n} objects indexed")))
        .map_err(ServerError::Engine)?;
    info!(
        objects = n,
        seconds = started.elapsed().as_secs_f64(),
        "catalog rebuilt"
    );
    Ok(())
}

/// `host-server migrate --from sqlite:DIR --to postgres://...`: copy a site into PostgreSQL.
#[derive(Parser, Debug)]
#[command(
    name = "host-server migrate",
    bin_name = "host-server migrate",
    about = "Copy the site of a SQLite data directory, every key, into a PostgreSQL database \
             (for servers started with --database); the server must not be running on DIR"
)]
struct MigrateCli {
    /// The source: `sqlite:DIR`, a data directory (DIR/site.sqlite3).
    #[arg(long, value_name = "sqlite:DIR")]
    from: String,

    /// The target: a PostgreSQL URL (`postgres://USER:PASSWORD@HOST:PORT/DBNAME`). Its table
    /// `kv` is created when missing and must be empty.
    #[arg(long, value_name = "URL")]
    to: String,

    /// Empty a target that already holds a site before copying (else it is refused).
    #[arg(long)]
    replace: bool,

    /// Log level or filter.
    #[arg(long, value_name = "LEVEL", env = "RUST_LOG", default_value = "warn")]
    log: String,
}

fn migrate(cli: MigrateCli) -> Result<(), ServerError> {
    let Some(dir) = cli.from.strip_prefix("sqlite:") else {
        return Err(ServerError::Config(format!(
            "--from {}: expected sqlite:DIR (a data directory)",
            cli.from
        )));
    };
    let db = host_server::db_path(std::path::Path::new(dir));
    if !db.is_file() {
        return Err(ServerError::Config(format!(
            "--from {}: no database at {}",
            cli.from,
            db.display()
        )));
    }
    let source = host_server::SqliteStore::open(&db, SqliteOptions::default())
        .map_err(ServerError::Database)?;
    let target =
        host_server::PgStore::open(&cli.to, PgOptions::default()).map_err(ServerError::Database)?;
    let total = source.key_count().map_err(ServerError::Database)?;
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} keys ({per_sec}, {msg}) eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let copied = host_server::migrate::copy_site(&source, &target, cli.replace, |keys, bytes| {
        bar.set_position(keys);
        bar.set_message(format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0)));
    })
    .map_err(ServerError::Database)?;
    bar.finish();
    say(&format!(
        "copied {} keys ({:.1} MiB) from {} in {:.1} s; start the servers with --database",
        copied.keys,
        copied.bytes as f64 / (1024.0 * 1024.0),
        db.display(),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// `host-server backup --data DIR --to FILE`: a consistent copy of a running site.
#[derive(Parser, Debug)]
#[command(
    name = "host-server backup",
    bin_name = "host-server backup",
    about = "Write a consistent copy of the site in DIR (content, users, secrets, files: all of \
             it) to FILE, a SQLite database; the server may keep running and writing meanwhile. \
             For a site in PostgreSQL use pg_dump (see the README)"
)]
struct BackupCli {
    /// Data directory of the site.
    #[arg(long, value_name = "DIR", default_value = "./var")]
    data: PathBuf,

    /// The backup file to create (refused if it exists).
    #[arg(long, value_name = "FILE")]
    to: PathBuf,

    /// Log level or filter.
    #[arg(long, value_name = "LEVEL", env = "RUST_LOG", default_value = "warn")]
    log: String,
}

/// `host-server restore --from FILE --data DIR`: bring a backup back.
#[derive(Parser, Debug)]
#[command(
    name = "host-server restore",
    bin_name = "host-server restore",
    about = "Make the backup FILE (written by `host-server backup`) the site of DIR; DIR must \
             hold no site unless --replace, and no server may be running on it"
)]
struct RestoreCli {
    /// The backup file.
    #[arg(long, value_name = "FILE")]
    from: PathBuf,

    /// Data directory to restore into (created if missing).
    #[arg(long, value_name = "DIR", default_value = "./var")]
    data: PathBuf,

    /// Overwrite the site DIR already holds.
    #[arg(long)]
    replace: bool,

    /// Log level or filter.
    #[arg(long, value_name = "LEVEL", env = "RUST_LOG", default_value = "warn")]
    log: String,
}

fn backup(cli: BackupCli) -> Result<(), ServerError> {
    let r = host_server::backup::backup(&cli.data, &cli.to)?;
    say(&format!(
        "backed up {} keys ({:.1} MiB) to {} in {:.1} s",
        r.keys,
        r.bytes as f64 / (1024.0 * 1024.0),
        cli.to.display(),
        r.elapsed.as_secs_f64()
    ));
    Ok(())
}

fn restore(cli: RestoreCli) -> Result<(), ServerError> {
    let r = host_server::backup::restore(&cli.from, &cli.data, cli.replace)?;
    say(&format!(
        "restored {} keys ({:.1} MiB) into {} in {:.1} s",
        r.keys,
        r.bytes as f64 / (1024.0 * 1024.0),
        cli.data.display(),
        r.elapsed.as_secs_f64()
    ));
    Ok(())
}

/// Run a subcommand: parse its arguments, log, map its error to exit status 1.
fn subcommand<C: Parser>(
    args: Vec<std::ffi::OsString>,
    log: fn(&C) -> &str,
    run: fn(C) -> Result<(), ServerError>,
) -> ExitCode {
    let cli = C::parse_from(args);
    init_logging(log(&cli), LogFormat::Text);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            eprintln!("host-server: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "migrate") {
        args.remove(1);
        let cli = MigrateCli::parse_from(args);
        init_logging(&cli.log, LogFormat::Text);
        return match migrate(cli) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                error!("{e}");
                eprintln!("host-server: error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.get(1).is_some_and(|a| a == "backup") {
        args.remove(1);
        return subcommand(args, |c: &BackupCli| &c.log, backup);
    }
    if args.get(1).is_some_and(|a| a == "restore") {
        args.remove(1);
        return subcommand(args, |c: &RestoreCli| &c.log, restore);
    }
    if args.get(1).is_some_and(|a| a == "reindex") {
        args.remove(1);
        let cli = ReindexCli::parse_from(args);
        init_logging(&cli.log, LogFormat::Text);
        return match reindex(cli) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                error!("{e}");
                eprintln!("host-server: error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse();
    init_logging(&cli.log, cli.log_format);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            eprintln!("host-server: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(filter: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|e| {
        eprintln!("host-server: ignoring invalid --log filter {filter:?} ({e}); using `info`");
        tracing_subscriber::EnvFilter::new("info")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        // The request's span (method, path, request_id) rides along as `span` on each line.
        LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

fn run(cli: Cli) -> Result<(), ServerError> {
    let config = Config {
        public_url: cli.public_url.clone(),
        trust_forwarded: cli.trust_forwarded,
        cors_origins: cli.cors_origins.clone(),
        // The PostgreSQL client must not run on an async worker (it blocks on its own runtime).
        blocking_reads: cli.blocking_reads || cli.database.is_some(),
        read_your_writes: cli.read_database.is_some(),
        sso: None,
        login_limits: LoginLimits {
            per_login: cli.login_failures_per_login,
            per_address: cli.login_failures_per_address,
        },
        body_timeout: Some(Duration::from_secs(cli.body_timeout)),
        changes_wake: None,
        shutdown: None,
        stream_limits: StreamLimits {
            total: cli.max_streams as usize,
            per_address: cli.max_streams_per_address as usize,
            anonymous: cli.max_anonymous_streams as usize,
        },
    }
    .validated()?;
    let mut config = config;
    let limits = Limits {
        header_timeout: Duration::from_secs(cli.header_timeout),
        idle_timeout: Duration::from_secs(cli.idle_timeout),
        max_connections: fit_open_files(cli.max_connections as usize),
        max_connections_per_address: (!cli.trust_forwarded)
            .then_some(cli.max_connections_per_address as usize),
    };

    let mut options = if cli.deterministic {
        warn!(
            "--deterministic: fixed clock, predictable ids and secrets, weak password hashing. \
             This mode exists for contract tests only; NEVER use it for real data."
        );
        EngineOptions::for_tests()
    } else {
        EngineOptions {
            response_cache_bytes: cli
                .response_cache_mb
                .unwrap_or(if cli.database.is_some() { 0 } else { 64 })
                .saturating_mul(1024 * 1024),
            // Other servers write the same database: cached answers are checked against the
            // generation each request reads (`EngineOptions::shared_store`).
            shared_store: cli.database.is_some(),
            ..EngineOptions::production()
        }
    };
    // Several servers on one database are not seen by this engine's commit log (clap refuses
    // --parallel-writes with --database).
    options.parallel_writes = cli.parallel_writes;
    // The embedding model only when asked for (`--deterministic` alone leaves it off).
    options.embedder = match &cli.embedding_model {
        Some(spec) => {
            let e = host_server::load_embedder(spec)?;
            info!(model = %e.id(), dim = e.dim(), "embedding model loaded");
            Some(e)
        }
        None => None,
    };
    options.llm = cli.llm_url.as_deref().map(|url| {
        info!(url, model = %cli.llm_model, api = ?cli.llm_api, "language model configured");
        let key = std::env::var("LLM_API_KEY").ok().filter(|k| !k.is_empty());
        Arc::new(host_server::llm::HttpLlm::new(
            url,
            cli.llm_api,
            &cli.llm_model,
            key,
        )) as Arc<dyn engine::Llm>
    });
    if let Some(path) = &cli.oidc_config {
        let sso = host_server::oidc::Sso::load(path)?;
        options.login = sso.login_options(!cli.no_password_login);
        info!(
            providers = ?options.login.providers.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            password_login = options.login.password,
            "single sign-on configured"
        );
        config.sso = Some(Arc::new(sso));
    }
    // Downloads over 1 MiB are streamed from the store (see `app::respond`).
    options.stream_downloads_over = 1024 * 1024;
    // Failures inside the service answer a bare 500; their detail goes to the log only.
    options.error_log = Some(Arc::new(|detail: &str| {
        error!(detail, "a request failed inside the service");
    }));
    // Notices (content rules' logger actions, a password reset for a user without an address)
    // at INFO. Mails go through the outbox and are delivered by `delivery`, never logged.
    options.info_log = Some(Arc::new(|text: &str| {
        info!(text, "notice");
    }));
    options.progress_log = Some(Arc::new(|line: &str| {
        info!("{line}");
    }));
    // With --parallel-writes: why a prepared write ran again (the key another commit wrote), at
    // DEBUG (`--log host_server=debug`), to find a key every write meets.
    options.stale_log = Some(Arc::new(|why: &str| {
        tracing::debug!(why, "prepared write stale, runs again");
    }));
    // Reads run on the async workers (one per core) unless --blocking-reads: keep a connection
    // for each, so a worker never waits for a pooled reader.
    let cores = match cli.runtime_workers {
        Some(n) => n.get(),
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let sqlite = SqliteOptions {
        readers: usize::from(cli.readers).max(cores),
        sync: cli.sync,
        ..SqliteOptions::default()
    };
    // Commits that queue mails or webhooks wake the delivery task at once.
    let outbox = Arc::new(tokio::sync::Notify::new());
    let wake = outbox.clone();
    options.outbox_notify = Some(Arc::new(move || wake.notify_one()));
    options.webhook_destinations = cli.webhook_allow.clone();
    // Commits that write change log entries wake the change feed streams (`app::sse`).
    let (changes_tx, changes_rx) = tokio::sync::watch::channel(0u64);
    options.changes_notify = Some(Arc::new(move || {
        changes_tx.send_modify(|n| *n = n.wrapping_add(1));
    }));
    config.changes_wake = Some(changes_rx);
    if let Some(url) = cli.database.clone() {
        let alone_after = usize::from(cli.conflict_alone_after);
        let pg = PgOptions {
            connections: usize::from(cli.database_connections),
            write_mode: cli.write_mode,
            exclusive_retries: cli.write_mode == WriteMode::Optimistic && alone_after > 0,
            ..PgOptions::default()
        };
        // Conflicts (optimistic mode) are re-run after a pause; the requests run on the blocking
        // pool or the writer thread, where sleeping is allowed.
        options.conflict_retry = engine::ConflictRetry {
            max_attempts: usize::from(cli.conflict_attempts),
            pause: (cli.conflict_pause_ms > 0 || alone_after > 0).then(|| {
                Arc::new(host_server::postgres::conflict_pause(
                    Duration::from_millis(u64::from(cli.conflict_pause_ms)),
                    (alone_after > 0).then_some(alone_after),
                )) as Arc<dyn Fn(usize) + Send + Sync>
            }),
        };
        if let Some(read_url) = cli.read_database.clone() {
            let engine = host_server::open_engine_replicated(&url, &read_url, pg, options)?;
            info!(
                backend = %engine.options().store_backend,
                connections = cli.database_connections,
                "database open"
            );
            // Startup reads (does the site exist?) go to the primary.
            return host_server::postgres::with_min_generation(
                Some(host_server::postgres::PRIMARY_ONLY),
                || start(engine, &cli, config, limits, outbox),
            );
        }
        let engine = open_engine_postgres(&url, pg, options)?;
        info!(
            backend = %engine.options().store_backend,
            connections = cli.database_connections,
            "database open"
        );
        return start(engine, &cli, config, limits, outbox);
    }
    let engine = open_engine(&cli.data, sqlite, options)?;
    info!(
        db = %engine.store().path().display(),
        sync = %cli.sync,
        readers = cli.readers,
        "database open"
    );
    start(engine, &cli, config, limits, outbox)
}

/// Migrate, create the site if needed, and serve `engine` until a shutdown signal.
fn start<S: Store + Send + Sync + 'static>(
    engine: Engine<S>,
    cli: &Cli,
    config: Config,
    limits: Limits,
    outbox: Arc<tokio::sync::Notify>,
) -> Result<(), ServerError> {
    let report = engine.migration_report();
    if report.steps_run() > 0 {
        info!(
            from = ?report.from,
            to = ?report.to,
            steps = report.steps_run(),
            "schema migrated: {}",
            report.steps.join("; ")
        );
    }

    let languages: Vec<String> = cli
        .languages
        .iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    match ensure_site(
        &engine,
        std::env::var("ADMIN_PASSWORD").ok(),
        &cli.profiles,
        &languages,
    )? {
        SiteInit::Existing => {
            if !cli.profiles.is_empty() || !languages.is_empty() {
                engine
                    .configure_languages(&cli.profiles, &languages)
                    .map_err(ServerError::SiteSetup)?;
                info!(profiles = ?cli.profiles, languages = ?languages, "profiles applied to the existing site");
            }
        }
        SiteInit::Created {
            generated_password: None,
        } => info!(
            login = ADMIN_LOGIN,
            "created the site; admin password from ADMIN_PASSWORD"
        ),
        SiteInit::Created {
            generated_password: Some(password),
        } => {
            info!(
                login = ADMIN_LOGIN,
                "created the site with a generated admin password"
            );
            say(&format!(
                "created site; admin login \"{ADMIN_LOGIN}\", generated password: {password}"
            ));
        }
    }
    // The site profile, read once here (before the runtime starts): the answers host-server
    // builds itself (Host checks, body limit, throttle) take the site's error shape from it.
    let profile = engine.site_profile().map_err(ServerError::SiteSetup)?;
    info!(profile = profile.name(), "site profile");

    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(n) = cli.runtime_workers {
        runtime.worker_threads(n.get());
    }
    if let Some(n) = cli.runtime_event_interval {
        runtime.event_interval(n.get());
    }
    if let Some(n) = cli.runtime_global_queue_interval {
        runtime.global_queue_interval(n.get());
    }
    let runtime = runtime.build().map_err(|source| ServerError::Io {
        context: "cannot start the async runtime",
        source,
    })?;
    let result = runtime.block_on(serve(
        Arc::new(engine),
        config,
        (cli.listen.clone(), cli.metrics_listen.clone()),
        limits,
        outbox,
    ));
    // Requests still running on the blocking pool finish their transaction (or are abandoned,
    // which rolls back) — a committed write is durable either way.
    runtime.shutdown_timeout(Duration::from_secs(10));
    result
}

/// Print one line on stdout and flush it (stdout is read by scripts and tests).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        warn!(error = %e, "cannot write to stdout");
    }
}

/// The most queued outbox deliveries a metrics scrape counts (the backlog gauge stops there).
const OUTBOX_BACKLOG_CAP: usize = 100_000;

/// How long in-flight requests get to finish after a shutdown signal.
const GRACE: Duration = Duration::from_secs(30);

async fn serve<S: Store + Send + Sync + 'static>(
    engine: Arc<Engine<S>>,
    config: Config,
    (listen, metrics_listen): (String, Option<String>),
    limits: Limits,
    outbox: Arc<tokio::sync::Notify>,
) -> Result<(), ServerError> {
    // Install the signal handlers before announcing the address, so a signal sent right after
    // the announcement is never lost.
    let signals = Signals::install()?;
    if let Some(metrics_listen) = metrics_listen {
        let listener = tokio::net::TcpListener::bind(&metrics_listen)
            .await
            .map_err(|source| ServerError::Bind {
                addr: metrics_listen.clone(),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Io {
            context: "cannot read the bound metrics address",
            source,
        })?;
        host_server::metrics::install();
        let sampled = engine.clone();
        host_server::metrics::set_sampler(move || host_server::metrics::Sample {
            cache_lookups: sampled.response_cache_lookups(),
            outbox_backlog: sampled.outbox_backlog(OUTBOX_BACKLOG_CAP).ok(),
            prepared_reruns: sampled.prepared_reruns(),
            conflicts: sampled.conflict_stats(),
        });
        tokio::spawn(host_server::metrics::serve(listener));
        info!(%addr, "serving metrics");
        say(&format!("metrics on http://{addr}"));
    }
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|source| ServerError::Bind {
            addr: listen.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Io {
        context: "cannot read the bound address",
        source,
    })?;
    info!(%addr, "serving");
    say(&format!("listening on http://{addr}"));

    // Purge the recycle bin's expired items now and every hour; deliver the outbox; run the
    // scheduled jobs.
    tokio::spawn(purge_recyclebin_periodically(engine.clone()));
    tokio::spawn(host_server::delivery::run(engine.clone(), outbox));
    tokio::spawn(host_server::delivery::run_schedules(engine.clone()));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut config = config;
    config.shutdown = Some(stop_rx.clone());
    let router = app(engine, config);
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    tokio::select! {
        () = accept_loop(listener, router, limits, open.clone(), stop_rx) => {}
        () = signals.recv() => {}
    }
    // Stop accepting; every connection finishes its request in flight and closes.
    let _ = stop_tx.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(GRACE, open.acquire_many(all))
        .await
        .is_err()
    {
        warn!("requests still running {GRACE:?} after the shutdown signal; exiting anyway");
    }
    info!("stopped");
    Ok(())
}

/// File descriptors kept for other uses than client connections (the database, its WAL, the
/// outbox's connections, logs).
const SPARE_FILES: u64 = 256;

/// `max_connections`, after raising the process's open-file limit (soft, up to the hard limit)
/// to fit it; lowered to what fits when the hard limit is smaller (with a warning).
fn fit_open_files(max_connections: usize) -> usize {
    let wanted = (max_connections as u64).saturating_add(SPARE_FILES);
    match rlimit::increase_nofile_limit(wanted) {
        Ok(limit) if limit >= wanted => max_connections,
        Ok(limit) => {
            let fits = usize::try_from(limit.saturating_sub(SPARE_FILES).max(1))
                .unwrap_or(max_connections);
            warn!(
                open_files = limit,
                max_connections = fits,
                "the open-file limit is below --max-connections plus {SPARE_FILES}; serving \
                 fewer connections at once"
            );
            fits
        }
        Err(e) => {
            warn!(error = %e, "cannot read or raise the open-file limit");
            max_connections
        }
    }
}

/// Accept connections while fewer than `max_connections` are open (a connection past the cap
/// waits in the listen queue), closing at once one from an address that holds its
/// `max_connections_per_address` already, and serving each other on its own task with the
/// first-byte, header and idle timeouts ([`serve_connection`]).
async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: Limits,
    open: Arc<tokio::sync::Semaphore>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut builder =
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    // hyper's own header-read timeout also runs while a kept-alive connection waits for its
    // next request (so it would close idle connections after the header timeout, not the idle
    // one), and never while the automatic HTTP/1-or-2 detection waits for the first bytes:
    // `serve_connection` keeps both deadlines itself.
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(None);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(Some(limits.idle_timeout))
        .keep_alive_timeout(limits.header_timeout);
    let builder = Arc::new(builder);
    let per_address = limits.max_connections_per_address.map(PerAddress::new);
    loop {
        let Ok(permit) = open.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait a moment rather than spin.
                warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let from_address = match &per_address {
            Some(per) => match per.try_take(peer.ip()) {
                Some(p) => Some(p),
                None => {
                    tracing::debug!(%peer, "closing a connection past the per-address limit");
                    continue;
                }
            },
            None => None,
        };
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        let router = router.clone();
        let stop = stop.clone();
        host_server::metrics::connections(1);
        tokio::spawn(async move {
            serve_connection(&builder, stream, peer, router, limits, stop).await;
            host_server::metrics::connections(-1);
            drop(from_address);
            drop(permit);
        });
    }
}

/// Milliseconds since `since`, saturating.
fn millis_since(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// What a connection is doing, for its deadlines (times in ms since it was accepted, plus one,
/// so that 0 means "not yet").
#[derive(Default)]
struct Activity {
    /// Requests whose headers came and whose answer has not started yet.
    in_flight: AtomicUsize,
    /// Answers started.
    answered: AtomicU64,
    /// When the last answer started.
    last_done: AtomicU64,
    /// When the first byte after the last complete request head (or since the connection
    /// opened) was read: the next request's head is arriving since then.
    head_started: AtomicU64,
    /// The connection speaks HTTP/2 (its first bytes were the preface): between requests it
    /// carries frames that are no request head (pings, window updates), so once it has been
    /// answered only the idle deadline applies.
    h2: std::sync::atomic::AtomicBool,
}

/// A connection's socket that notes in its [`Activity`] when a request's first bytes arrive.
struct Watched {
    inner: tokio::net::TcpStream,
    epoch: Instant,
    activity: Arc<Activity>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if before == 0 && buf.filled().starts_with(b"PRI * HTTP/2") {
            self.activity.h2.store(true, Ordering::SeqCst);
        }
        if buf.filled().len() > before && self.activity.head_started.load(Ordering::SeqCst) == 0 {
            let now = millis_since(self.epoch).saturating_add(1);
            let _ = self.activity.head_started.compare_exchange(
                0,
                now,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// What the connection's next deadline is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deadline {
    /// Its first request's head (counted from the connection's start), or the rest of a later
    /// request's head (counted from its first byte).
    Head,
    /// Its next request (kept alive after an answer).
    Idle,
    /// None while a request is in progress: look again after this long.
    Busy,
}

/// When (ms since the connection was accepted) the connection's current wait ends, and what for.
fn deadline(activity: &Activity, limits: &Limits) -> (u64, Deadline) {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if activity.in_flight.load(Ordering::SeqCst) > 0 {
        return (0, Deadline::Busy);
    }
    if activity.answered.load(Ordering::SeqCst) == 0 {
        // The first request's head, counted from the connection's start.
        return (ms(limits.header_timeout), Deadline::Head);
    }
    let head = activity.head_started.load(Ordering::SeqCst);
    if head > 0 && !activity.h2.load(Ordering::SeqCst) {
        return (
            (head - 1).saturating_add(ms(limits.header_timeout)),
            Deadline::Head,
        );
    }
    let done = activity.last_done.load(Ordering::SeqCst).saturating_sub(1);
    (done.saturating_add(ms(limits.idle_timeout)), Deadline::Idle)
}

/// Serve one connection until it closes. A connection that sends no complete request head within
/// the header timeout of being accepted (or of its head's first byte) is dropped; one that sends
/// no next request within the idle timeout of its last answer is closed gracefully (an answer
/// still being sent, such as an event stream, goes on); every connection closes when the server
/// stops. hyper-util's builder offers no timer that does this (see [`accept_loop`]).
async fn serve_connection(
    builder: &hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: axum::Router,
    limits: Limits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let epoch = Instant::now();
    let activity = Arc::new(Activity::default());
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ClientAddr(peer.ip()));
            activity.in_flight.fetch_add(1, Ordering::SeqCst);
            activity.head_started.store(0, Ordering::SeqCst);
            let activity = activity.clone();
            let router = router.clone();
            async move {
                let resp = tower::ServiceExt::oneshot(router, req).await;
                activity
                    .last_done
                    .store(millis_since(epoch).saturating_add(1), Ordering::SeqCst);
                activity.answered.fetch_add(1, Ordering::SeqCst);
                activity.head_started.store(0, Ordering::SeqCst);
                activity.in_flight.fetch_sub(1, Ordering::SeqCst);
                resp
            }
        })
    };
    let io = Watched {
        inner: stream,
        epoch,
        activity: activity.clone(),
    };
    let conn = builder.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(conn);
    let tokio_epoch = tokio::time::Instant::from_std(epoch);
    let mut closing = false;
    loop {
        let (at, what) = deadline(&activity, &limits);
        let wake = match what {
            Deadline::Busy => {
                tokio::time::Instant::now() + limits.header_timeout.min(limits.idle_timeout)
            }
            _ => tokio_epoch + Duration::from_millis(at),
        };
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = tokio::time::sleep_until(wake), if !closing => {
                // Look again: the connection may have moved on meanwhile.
                let (at, now_what) = deadline(&activity, &limits);
                if now_what == what && what != Deadline::Busy && millis_since(epoch) >= at {
                    if what == Deadline::Head {
                        tracing::debug!(%peer, "closing a connection whose request head did not come in time");
                        return;
                    }
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
            _ = stop.wait_for(|stopped| *stopped), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// How often the recycle bin's expired items are purged.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// Purge the recycle bin's items older than the site's retention period, at once and then every
/// [`PURGE_EVERY`] (on the blocking pool: it is one write transaction).
async fn purge_recyclebin_periodically<S: Store + Send + Sync + 'static>(engine: Arc<Engine<S>>) {
    let mut every = tokio::time::interval(PURGE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let engine = engine.clone();
        match tokio::task::spawn_blocking(move || engine.purge_expired_recyclebin()).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => info!(items = n, "recycle bin: purged expired items"),
            Ok(Err(e)) => warn!(error = %e, "recycle bin: purging expired items failed"),
            Err(e) => warn!(error = %e, "recycle bin: the purge task failed"),
        }
    }
}

/// SIGINT and SIGTERM (Ctrl-C only, off Unix).
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Self, ServerError> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let err = |source| ServerError::Io {
                context: "cannot install signal handlers",
                source,
            };
            Ok(Signals {
                int: signal(SignalKind::interrupt()).map_err(err)?,
                term: signal(SignalKind::terminate()).map_err(err)?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    async fn recv(self) {
        #[cfg(unix)]
        {
            let Signals { mut int, mut term } = self;
            tokio::select! {
                _ = int.recv() => info!("SIGINT received; shutting down"),
                _ = term.recv() => info!("SIGTERM received; shutting down"),
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_ok() {
                info!("Ctrl-C received; shutting down");
            } else {
                std::future::pending::<()>().await;
            }
        }
    }
}
