//! The `host-server` binary: command line, startup, serving, graceful shutdown.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use engine::{Engine, EngineOptions};
use host_server::{
    app, ensure_site, open_engine, Config, ServerError, SiteInit, SqliteOptions, SqliteStore,
    SyncMode, ADMIN_LOGIN,
};
use tracing::{error, info, warn};

/// mimalloc: the engine allocates many small JSON values per request on several threads, where
/// glibc malloc showed up as a quarter of the CPU profile of listing requests.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve the Plone-REST-API-compatible content engine over HTTP, stored in SQLite.
#[derive(Debug, Parser)]
#[command(
    name = "host-server",
    version,
    after_help = "ENVIRONMENT:\n  \
        ADMIN_PASSWORD  Password of the `admin` user created on first start (when the data\n                  \
        directory holds no site yet). Without it a random password is generated and\n                  \
        printed once to stdout. Ignored once the site exists.\n  \
        RUST_LOG        Log filter, used when --log is not given.\n\n\
        OUTPUT:\n  \
        stdout carries only the generated admin password (first start only) and the line\n  \
        `listening on http://ADDR` once the socket is bound; logs go to stderr.\n\n\
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

    /// Public base URL of the site (e.g. https://cms.example.org), used in every `@id`. Without
    /// it, each request's Host header decides (or its X-Forwarded-Proto / X-Forwarded-Host
    /// headers, with --trust-forwarded).
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,

    /// Take the base URL from X-Forwarded-Proto / X-Forwarded-Host: set this behind a reverse
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

    /// Install a profile: `multilingual` (translations between the site's languages) or
    /// `multilingual-content` (the same, plus one language root folder `/<code>/` per language,
    /// each a navigation root). Repeatable. Applied when the site is created and, on an existing
    /// site, at every start (installing is idempotent), so adding the flag later enables it.
    #[arg(long = "profile", value_name = "PROFILE", value_parser = ["multilingual", "multilingual-content"])]
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

    /// Memory (MiB) for answers to repeated GET requests, reused until the next write or the
    /// next second, whichever comes first; 0 turns the cache off.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    response_cache_mb: usize,

    /// Run read requests on a separate thread pool instead of the async workers (for slow
    /// disks, where one read waiting on I/O should not hold up other connections).
    #[arg(long)]
    blocking_reads: bool,

    /// Log level or filter (error, warn, info, debug, trace, or e.g. `info,tower_http=debug`).
    #[arg(long, value_name = "LEVEL", env = "RUST_LOG", default_value = "info")]
    log: String,
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
    let progress: engine::state::ErrorLog = Arc::new(|line: &str| {
        info!("{line}");
    });
    options.progress_log = Some(progress.clone());
    let engine = open_engine(&cli.data, SqliteOptions::default(), options)?;
    let started = std::time::Instant::now();
    let n = engine
        .with_write(|ctx| {
            engine::catalog::rebuild(ctx, &mut |n| {
                progress(&format!("catalog: {n} objects indexed"))
            })
        })
        .map_err(ServerError::Engine)?;
    info!(
        objects = n,
        seconds = started.elapsed().as_secs_f64(),
        "catalog rebuilt"
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "reindex") {
        args.remove(1);
        let cli = ReindexCli::parse_from(args);
        init_logging(&cli.log);
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
    init_logging(&cli.log);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            eprintln!("host-server: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|e| {
        eprintln!("host-server: ignoring invalid --log filter {filter:?} ({e}); using `info`");
        tracing_subscriber::EnvFilter::new("info")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

fn run(cli: Cli) -> Result<(), ServerError> {
    let config = Config {
        public_url: cli.public_url,
        trust_forwarded: cli.trust_forwarded,
        cors_origins: cli.cors_origins,
        blocking_reads: cli.blocking_reads,
    }
    .validated()?;

    let mut options = if cli.deterministic {
        warn!(
            "--deterministic: fixed clock, predictable ids and secrets, weak password hashing. \
             This mode exists for contract tests only; NEVER use it for real data."
        );
        EngineOptions::for_tests()
    } else {
        EngineOptions {
            response_cache_bytes: cli.response_cache_mb.saturating_mul(1024 * 1024),
            ..EngineOptions::production()
        }
    };
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
        )) as Arc<dyn engine::llm::Llm>
    });
    // Downloads over 1 MiB are streamed from the store (see `app::respond`).
    options.stream_downloads_over = 1024 * 1024;
    // Failures inside the service answer a bare 500; their detail goes to the log only.
    options.error_log = Some(Arc::new(|detail: &str| {
        error!(detail, "a request failed inside the service");
    }));
    // Mails (password reset links) are logged until mail delivery exists.
    options.info_log = Some(Arc::new(|text: &str| {
        info!(text, "mail not sent (no mail delivery configured)");
    }));
    options.progress_log = Some(Arc::new(|line: &str| {
        info!("{line}");
    }));
    // Reads run on the async workers (one per core) unless --blocking-reads: keep a connection
    // for each, so a worker never waits for a pooled reader.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let sqlite = SqliteOptions {
        readers: usize::from(cli.readers).max(cores),
        sync: cli.sync,
        ..SqliteOptions::default()
    };
    let engine = open_engine(&cli.data, sqlite, options)?;
    info!(
        db = %engine.store().path().display(),
        sync = %cli.sync,
        readers = cli.readers,
        "database open"
    );
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

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| ServerError::Io {
            context: "cannot start the async runtime",
            source,
        })?;
    let result = runtime.block_on(serve(Arc::new(engine), config, cli.listen));
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

/// How long in-flight requests get to finish after a shutdown signal.
const GRACE: Duration = Duration::from_secs(30);

async fn serve(
    engine: Arc<Engine<SqliteStore>>,
    config: Config,
    listen: String,
) -> Result<(), ServerError> {
    // Install the signal handlers before announcing the address, so a signal sent right after
    // the announcement is never lost.
    let signals = Signals::install()?;
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

    // There is no job scheduler yet: purge the recycle bin's expired items now and every hour.
    tokio::spawn(purge_recyclebin_periodically(engine.clone()));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        signals.recv().await;
        let _ = stop_tx.send(true);
    };
    let server = std::future::IntoFuture::into_future(
        axum::serve(listener, app(engine, config)).with_graceful_shutdown(shutdown),
    );
    let grace = async move {
        let mut stop_rx = stop_rx;
        if stop_rx.wait_for(|stopped| *stopped).await.is_err() {
            // The server ended on its own; nothing to wait for.
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(GRACE).await;
    };
    tokio::select! {
        res = server => res.map_err(|source| ServerError::Io { context: "serving failed", source })?,
        () = grace => warn!("requests still running {GRACE:?} after the shutdown signal; exiting anyway"),
    }
    info!("stopped");
    Ok(())
}

/// How often the recycle bin's expired items are purged.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// Purge the recycle bin's items older than the site's retention period, at once and then every
/// [`PURGE_EVERY`] (on the blocking pool: it is one write transaction).
async fn purge_recyclebin_periodically(engine: Arc<Engine<SqliteStore>>) {
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
