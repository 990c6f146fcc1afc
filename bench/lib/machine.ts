import { readFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;

/** The installed version of a root dependency (read from node_modules: not every package exports its package.json). */
function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}

export interface MachineInfo {
  os: string;
  cpuModel: string;
  cpus: number;
  totalMemoryGiB: number;
  loadAverageAtStart: number[];
  node: string;
  postgres: string;
  postgresSettings: Record<string, string>;
  redis: string;
  packages: Record<string, string>;
}

export function machineInfo(
  postgres: { version: string; settings: Record<string, string> },
  redis: string,
): MachineInfo {
  const list = cpus();
  return {
    os: `${platform()} ${release()} ${arch()}`,
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    cpus: list.length,
    totalMemoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
    postgres: postgres.version,
    postgresSettings: postgres.settings,
    redis,
    packages: Object.fromEntries(
      ['fastify', 'bullmq', 'ioredis', 'pg', 'kysely', 'autocannon', 'tsx'].map((p) => [p, versionOf(p)]),
    ),
  };
}
