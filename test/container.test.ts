import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { freePort } from './helpers/own-services.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { logRecords, waitFor } from './helpers/worker-process.ts';

/**
 * The container as platforms run it, without a Docker engine (there is none here): what the
 * Dockerfile and docker-compose.yml say is read and held to the repository (the user is a
 * non-root number, the health check asks /healthz, every file the `observability` profile
 * mounts exists, Prometheus' configuration and rules pass promtool, Grafana's provisioning
 * points at the dashboard and at Prometheus), and the worker is run as the image runs it:
 * as user 1000, on a read-only root filesystem with /tmp in memory (a mount namespace of its
 * own: `unshare`, the repository and Node bound in read-only), where it must start, answer
 * /healthz and /metrics, write its schedules to Postgres, and stop cleanly.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);

const mountSchema = z.union([z.string(), z.object({ type: z.string(), source: z.string(), target: z.string() })]);
const serviceSchema = z.looseObject({
  image: z.string().optional(),
  build: z.unknown().optional(),
  profiles: z.array(z.string()).optional(),
  command: z.union([z.string(), z.array(z.string())]).optional(),
  environment: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  volumes: z.array(mountSchema).optional(),
  read_only: z.boolean().optional(),
  tmpfs: z.array(z.string()).optional(),
  ports: z.array(z.string()).optional(),
});
const composeSchema = z.object({ services: z.record(z.string(), serviceSchema), volumes: z.record(z.string(), z.unknown()).optional() });
const compose = composeSchema.parse(parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')));

/** A service's bind mounts of repository files: [path in the repository, path in the container]. */
function binds(service: string): Array<[string, string]> {
  return (compose.services[service]?.volumes ?? []).flatMap((volume) => {
    const [source, target] = typeof volume === 'string' ? volume.split(':') : [volume.source, volume.target];
    return source?.startsWith('./') && target ? [[path.join(ROOT, source), target] as [string, string]] : [];
  });
}

describe('docker-compose.yml', () => {
  it('parses, and its observability profile adds Prometheus and Grafana beside the default services', () => {
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['postgres', 'redis', 'worker', 'simulator', 'prometheus', 'grafana']));
    expect(compose.services.prometheus?.profiles).toEqual(['observability']);
    expect(compose.services.grafana?.profiles).toEqual(['observability']);
    expect(compose.services.worker?.profiles).toBeUndefined();
    // Named volumes are declared.
    for (const service of Object.values(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = typeof volume === 'string' ? volume.split(':')[0]! : volume.source;
        if (!source.startsWith('./') && !source.startsWith('/')) expect(Object.keys(compose.volumes ?? {})).toContain(source);
      }
    }
  });

  it('mounts only files that exist in the repository', () => {
    const all = Object.keys(compose.services).flatMap(binds);
    expect(all.map(([source]) => path.relative(ROOT, source)).sort()).toEqual([
      'deploy/grafana/provisioning',
      'deploy/grafana/trainsync.json',
      'deploy/prometheus/prometheus.yml',
      'deploy/prometheus/trainsync.rules.yml',
    ]);
    for (const [source] of all) expect(existsSync(source), source).toBe(true);
  });

  it("gives Prometheus a configuration and the rules it names, which promtool accepts, scraping the worker as job trainsync", async () => {
    const mounted = new Map(binds('prometheus').map(([source, target]) => [target, source]));
    const configPath = mounted.get('/etc/prometheus/prometheus.yml');
    expect(configPath).toBe(path.join(ROOT, 'deploy/prometheus/prometheus.yml'));
    const config = z
      .object({ rule_files: z.array(z.string()), scrape_configs: z.array(z.object({ job_name: z.string(), static_configs: z.array(z.object({ targets: z.array(z.string()) })) })) })
      .parse(parse(readFileSync(configPath!, 'utf8')));
    // Each rule file it names is one the service mounts: the shipped rules.
    expect(config.rule_files.map((file) => mounted.get(file))).toEqual([path.join(ROOT, 'deploy/prometheus/trainsync.rules.yml')]);
    // The job TrainsyncWorkerAbsent looks for, at the worker service's metrics port.
    expect(config.scrape_configs).toEqual([expect.objectContaining({ job_name: 'trainsync', static_configs: [{ targets: ['worker:9464'] }] })]);
    // promtool checks the configuration and the rules it loads, the container's paths taken to the repository's.
    const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-promconfig-'));
    try {
      const local = { ...(parse(readFileSync(configPath!, 'utf8')) as Record<string, unknown>), rule_files: config.rule_files.map((file) => mounted.get(file)) };
      writeFileSync(path.join(dir, 'prometheus.yml'), stringify(local));
      const { stdout } = await run('promtool', ['check', 'config', path.join(dir, 'prometheus.yml')]);
      expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('provisions Grafana with Prometheus as its data source and the dashboard in the folder its provider reads', () => {
    const mounted = new Map(binds('grafana').map(([source, target]) => [target, source]));
    const provisioning = mounted.get('/etc/grafana/provisioning');
    expect(provisioning).toBe(path.join(ROOT, 'deploy/grafana/provisioning'));
    const sources = z.object({ datasources: z.array(z.object({ type: z.string(), url: z.string(), isDefault: z.boolean().optional() })) }).parse(parse(readFileSync(path.join(provisioning!, 'datasources/prometheus.yml'), 'utf8')));
    expect(sources.datasources).toEqual([expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true })]);
    const providers = z.object({ providers: z.array(z.object({ type: z.literal('file'), options: z.object({ path: z.string() }) })) }).parse(parse(readFileSync(path.join(provisioning!, 'dashboards/trainsync.yml'), 'utf8')));
    const folder = providers.providers[0]!.options.path;
    const dashboards = [...mounted].filter(([target]) => path.dirname(target) === folder);
    expect(dashboards).toEqual([[`${folder}/trainsync.json`, path.join(ROOT, 'deploy/grafana/trainsync.json')]]);
    expect(compose.services.grafana?.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(`${folder}/trainsync.json`);
  });

  it('runs the worker on a read-only root filesystem with /tmp in memory', () => {
    expect(compose.services.worker).toMatchObject({ read_only: true, tmpfs: ['/tmp'] });
  });
});

describe('the Dockerfile', () => {
  const lines = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').split('\n').filter((line) => !line.startsWith('#'));
  it('runs as a non-root user given by number, with a health check of /healthz, and copies only what exists', () => {
    const users = lines.filter((line) => line.startsWith('USER '));
    expect(users).toEqual(['USER 1000:1000']);
    const healthcheck = lines.find((line) => line.startsWith('HEALTHCHECK '));
    expect(healthcheck).toMatch(/CMD node -e .*\/healthz/);
    expect(lines).toContain('ENV TMPDIR=/tmp');
    for (const line of lines.filter((l) => l.startsWith('COPY '))) {
      for (const source of line.split(/\s+/).slice(1, -1)) expect(existsSync(path.join(ROOT, source)), line).toBe(true);
    }
  });
});

describe('the worker as the image runs it', () => {
  let database: TestDatabase | undefined;
  let prefix: string | undefined;
  afterAll(async () => {
    await database?.drop();
    if (prefix) await dropPrefix(prefix);
  });

  it('starts as user 1000 on a read-only root with /tmp in memory, serves /healthz and /metrics, and stops cleanly', async () => {
    database = await createTestDatabase();
    prefix = testPrefix();
    const port = await freePort();
    const nodeDir = path.dirname(process.execPath);
    // In a mount namespace of its own: /tmp a new tmpfs; the repository and Node bound read-only
    // under it (whatever folders hold them, user 1000 reaches them there); then / read-only.
    // Both are first bound on a tmpfs of this namespace's /mnt, so a checkout that is itself
    // under /tmp is still reachable once the new /tmp hides it.
    const script = [
      'set -e',
      'mount -t tmpfs tmpfs /mnt',
      'mkdir /mnt/app /mnt/node',
      'mount --bind "$APP" /mnt/app',
      'mount --bind "$NODE_DIR" /mnt/node',
      'mount -t tmpfs -o mode=1777 tmpfs /tmp',
      'mkdir /tmp/app /tmp/node',
      'mount --bind /mnt/app /tmp/app && mount -o remount,bind,ro /tmp/app',
      'mount --bind /mnt/node /tmp/node && mount -o remount,bind,ro /tmp/node',
      'mount -o remount,bind,ro /',
      'cd /tmp/app',
      `exec setpriv --reuid=1000 --regid=1000 --clear-groups /tmp/node/${path.basename(process.execPath)} bin/trainsync.js worker`,
    ].join('\n');
    const child = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
      env: {
        PATH: '/usr/bin:/bin',
        APP: ROOT,
        NODE_DIR: nodeDir,
        TMPDIR: '/tmp',
        TRAINSYNC_API_URL: 'http://127.0.0.1:9',
        TRAINSYNC_API_KEY: 'not-used-here',
        DATABASE_URL: database.url,
        TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
        REDIS_URL,
        TRAINSYNC_QUEUE_PREFIX: prefix,
        TRAINSYNC_METRICS_PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
    try {
      await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`the worker exited (${child.exitCode}):\n${output}`);
        return fetch(`http://127.0.0.1:${port}/healthz`).then((r) => (r.status === 200 ? true : undefined), () => undefined);
      }, 60_000, 'the worker to answer /healthz');
      // What the test set up is what the worker runs in: user 1000, / read-only, /tmp a tmpfs.
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      expect(status).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
      const mounts = readFileSync(`/proc/${child.pid}/mounts`, 'utf8').split('\n').map((line) => line.split(' '));
      expect(mounts.find((m) => m[1] === '/')?.[3]).toMatch(/^ro\b/);
      expect(mounts.find((m) => m[1] === '/tmp')?.[2]).toBe('tmpfs');
      await waitFor(async () => (logRecords(output).some((r) => r.msg === 'worker started') ? true : undefined), 60_000, 'the worker to start its workers');
      // Its schedules went to Postgres (the freshness view's), nothing to the filesystem.
      const schedule = /^trainsync_sync_schedule_interval_seconds\{org="default",resource="results"\} 86400$/m;
      const metrics = await waitFor(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return schedule.test(text) ? text : undefined;
      }, 60_000, 'the schedules in /metrics');
      expect(metrics).toMatch(/^trainsync_dependency_up\{service="postgres"\} 1$/m);
      expect(metrics).toMatch(/^trainsync_queue_workers\{queue="sync"\} [1-9]/m);
      expect(output).not.toMatch(/EROFS|EACCES|read-only file system/i);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 120_000);
});
