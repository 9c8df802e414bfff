// DuckDB writing the same rows as usersync's snapshot to Parquet (zstd): the
// yardstick of `go run ./bench`. It loads the Parquet files usersync wrote
// into an in-memory table (not timed), then times COPY … TO of that table
// -repeat times (the fastest counts: the machine is shared) and prints one line
// of JSON:
//
//	{"rows": N, "seconds": S, "all_seconds": [S1, …], "bytes": B, "threads": T,
//	 "rss_loaded_mib": M, "rss_peak_mib": P, "duckdb": "v1.x.y"}
//
// rss_loaded_mib is the process's resident memory once the table is loaded;
// rss_peak_mib its peak during the COPYs (both include node and the table).
//
//	node write.mjs -threads 2 -repeat 3 -out /tmp/users.parquet part-00000.parquet [more.parquet …]
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { DuckDBInstance } from '@duckdb/node-api';

function usage(msg) {
  process.stderr.write(`write.mjs: ${msg}\nusage: node write.mjs [-threads N] [-repeat N] -out FILE.parquet INPUT.parquet...\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { threads: 2, repeat: 1, out: '', inputs: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-threads' || a === '--threads') {
      opts.threads = Number.parseInt(argv[++i], 10);
    } else if (a === '-repeat' || a === '--repeat') {
      opts.repeat = Number.parseInt(argv[++i], 10);
    } else if (a === '-out' || a === '--out') {
      opts.out = argv[++i] ?? '';
    } else if (a.startsWith('-')) {
      usage(`unknown flag ${a}`);
    } else {
      opts.inputs.push(a);
    }
  }
  if (!Number.isInteger(opts.threads) || opts.threads < 1) usage('-threads must be a positive number');
  if (!Number.isInteger(opts.repeat) || opts.repeat < 1) usage('-repeat must be a positive number');
  if (opts.out === '') usage('-out is required');
  if (opts.inputs.length === 0) usage('no input Parquet file');
  return opts;
}

// status reads a field of /proc/self/status in MiB (Linux only; null elsewhere).
function status(field) {
  try {
    const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

// resetPeak resets the process's peak RSS (VmHWM) to its current RSS, so that
// the peak read after the COPY is the COPY's. Returns false where unsupported.
function resetPeak() {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

const quote = (s) => `'${s.replaceAll("'", "''")}'`;

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const instance = await DuckDBInstance.create(':memory:', { threads: String(opts.threads) });
  const conn = await instance.connect();
  try {
    const version = (await conn.runAndReadAll('SELECT version()')).getRows()[0][0];
    await conn.run(`CREATE TABLE t AS SELECT * FROM read_parquet([${opts.inputs.map(quote).join(', ')}])`);
    const rows = Number((await conn.runAndReadAll('SELECT count(*) FROM t')).getRows()[0][0]);
    const loaded = status('VmRSS');
    const reset = resetPeak();
    const all = [];
    for (let i = 0; i < opts.repeat; i++) {
      const start = performance.now();
      await conn.run(`COPY t TO ${quote(opts.out)} (FORMAT parquet, COMPRESSION zstd)`);
      all.push((performance.now() - start) / 1000);
    }
    const peak = reset ? status('VmHWM') : null;
    const bytes = statSync(opts.out).size;
    process.stdout.write(JSON.stringify({
      rows, seconds: Math.min(...all), all_seconds: all, bytes, threads: opts.threads,
      rss_loaded_mib: loaded, rss_peak_mib: peak, duckdb: String(version),
    }) + '\n');
  } finally {
    conn.closeSync();
    instance.closeSync?.();
  }
}

main().catch((err) => {
  process.stderr.write(`write.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
