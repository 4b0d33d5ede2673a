//! The graph's schema in PostgreSQL: migrated by its owner (`sleuth setup`, or a process with `database.migrate`),
//! checked by a serving process on a read-only role, and made readable to that role.

use anyhow::Context;
use sqlx::{PgPool, migrate::Migrator};

/// The graph schema's migrations, embedded in the binary.
static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

/// The newest migration this binary knows.
fn latest() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Runs the migrations this schema lacks (as its owner: they create tables and the `pg_trgm` extension).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR.run(pool).await.context("cannot migrate the graph schema in Postgres")
}

/// Checks, without changing anything, that every migration this binary knows has been applied: a process that
/// does not migrate (`database.migrate = false`) must not serve an older schema.
pub async fn check(pool: &PgPool) -> anyhow::Result<()> {
    let applied: Result<Option<i64>, sqlx::Error> =
        sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success").fetch_one(pool).await;
    let not_ready = |have: String| {
        anyhow::anyhow!(
            "the graph schema in Postgres is not migrated ({have}, this binary needs version {}): run `sleuth setup` \
             with the schema owner's database URL, or set database.migrate = true on a process that may migrate it",
            latest()
        )
    };
    match applied {
        Ok(Some(version)) if version >= latest() => Ok(()),
        Ok(Some(version)) => Err(not_ready(format!("it is at version {version}"))),
        Ok(None) => Err(not_ready("no migration has been applied".into())),
        // 42P01: no such table, so no migration has ever run here.
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P01") => {
            Err(not_ready("no migration has been applied".into()))
        }
        Err(e) => Err(e).context("cannot read the graph schema's version (_sqlx_migrations)"),
    }
}

/// Lets `role` read the graph's tables and nothing more: usage of the schema, `SELECT` on its tables, now and on
/// those later migrations create. The role must exist: its password is the operator's, not sleuth's. `role` has
/// been checked to be a plain lower-case name (`DatabaseConfig::check`); it is quoted all the same.
pub async fn grant_reader(pool: &PgPool, role: &str) -> anyhow::Result<()> {
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)")
        .bind(role)
        .fetch_one(pool)
        .await
        .context("cannot look up the reader role")?;
    anyhow::ensure!(
        exists,
        "the role {role} (database.reader_role) does not exist: create it first, e.g. `CREATE ROLE {role} LOGIN \
         PASSWORD '…'` as a superuser, then run `sleuth setup` again"
    );
    let schema: String = sqlx::query_scalar("SELECT current_schema()").fetch_one(pool).await?;
    let (schema, role) = (quote(&schema), quote(role));
    for statement in [
        format!("GRANT USAGE ON SCHEMA {schema} TO {role}"),
        format!("GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}"),
        format!("ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {role}"),
    ] {
        sqlx::query(&statement).execute(pool).await.with_context(|| format!("cannot run `{statement}`"))?;
    }
    Ok(())
}

/// A PostgreSQL identifier, quoted.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// What `sleuth setup` does to the graph database at `url` (as the schema's owner): migrates it, and lets
/// `reader_role` read it. Returns a line saying so.
pub async fn prepare(url: &str, reader_role: Option<&str>) -> anyhow::Result<String> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .with_context(|| format!("cannot connect to the graph database at {}", crate::secrets::redact_url(url)))?;
    migrate(&pool).await?;
    let line = match reader_role {
        Some(role) => {
            grant_reader(&pool, role).await?;
            format!("graph schema in postgres: migrated (version {}); role {role} may read it", latest())
        }
        None => format!("graph schema in postgres: migrated (version {})", latest()),
    };
    pool.close().await;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_migration_is_the_highest_version() {
        assert!(latest() >= 2, "the readers migration is 0002");
    }

    #[test]
    fn identifiers_are_quoted_with_their_quotes_doubled() {
        assert_eq!(quote("sleuth_reader"), "\"sleuth_reader\"");
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }
}
