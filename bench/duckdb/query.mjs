// Runs SQL statements in one DuckDB session, in the current folder, and
// prints one line of JSON per statement: how many rows it returned and the
// first -keep of them as strings, or the error that stopped it. The
// statements come as a JSON array of strings on stdin. The tests of the
// analysts' examples (deploy/analysts_duckdb_test.go) run docs/analysts.md's
// DuckDB queries with it over a snapshot, on the DuckDB package the bench
// pins here, so both use the DuckDB analysts run.
//
//	echo '["SELECT 42"]' | node query.mjs -keep 10
//	{"rows": 1, "first": [["42"]]}
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

function parseArgs(argv) {
  const opts = { keep: 20 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '-keep' || argv[i] === '--keep') {
      opts.keep = Number.parseInt(argv[++i], 10);
    } else {
      process.stderr.write(`query.mjs: unknown argument ${argv[i]}\nusage: node query.mjs [-keep N] < statements.json\n`);
      process.exit(2);
    }
  }
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const statements = JSON.parse(readFileSync(0, 'utf8'));
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const conn = await instance.connect();
  try {
    for (const sql of statements) {
      let line;
      try {
        const rows = (await conn.runAndReadAll(sql)).getRows();
        line = { rows: rows.length, first: rows.slice(0, opts.keep).map((r) => r.map((v) => (v === null ? null : String(v)))) };
      } catch (err) {
        line = { rows: 0, error: String(err?.message ?? err) };
      }
      process.stdout.write(JSON.stringify(line) + '\n');
    }
  } finally {
    conn.closeSync();
    instance.closeSync?.();
  }
}

main().catch((err) => {
  process.stderr.write(`query.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
