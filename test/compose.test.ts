// docker-compose.yml runs several nodes as the README says: one PostgreSQL, two replicas of this
// image sharing it, nginx in front passing WebSockets. Compose itself does not run here, so this
// reads the file: official images only, every variable a replica is given is one the service
// reads, each replica a node of its own reachable by its peers, and the proxy upgrades sockets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { ConfigSchema, loadConfig } from '../src/config.ts';

const root = join(import.meta.dirname, '..');
const Service = z.object({
  image: z.string().optional(),
  build: z.unknown().optional(),
  environment: z.record(z.string(), z.string()).optional(),
  hostname: z.string().optional(),
});
const Compose = z.object({ services: z.record(z.string(), Service) });

describe('docker-compose.yml', () => {
  const compose = Compose.parse(parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }));
  const replicas = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);

  it('runs PostgreSQL and nginx from official images and two replicas of this image', () => {
    expect(compose.services.postgres?.image).toMatch(/^postgres:\d+-bookworm$/);
    expect(compose.services.proxy?.image).toMatch(/^nginx:[\d.]+-bookworm$/);
    expect(replicas.map(([name]) => name)).toEqual(['voicecall-a', 'voicecall-b']);
  });

  it('gives each replica a configuration the service accepts: the shared database, its own node id, an address its peers reach', () => {
    const known = new Set(Object.keys(ConfigSchema.shape));
    for (const [name, replica] of replicas) {
      const env = Object.fromEntries(
        Object.entries(replica.environment ?? {}).map(([k, v]) => [k, v.replace(/\$\{[A-Z_]+:[?-]([^}]*)\}/, '$1')]),
      );
      for (const key of Object.keys(env)) expect(known, `${name}: ${key}`).toContain(key);
      const config = loadConfig({ ...env, API_KEYS: `acme:${'k'.repeat(32)}` });
      expect(config.database?.url).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
      expect(config.nodeId).toBe(name);
      expect(config.peer).toMatchObject({ host: '0.0.0.0', address: replica.hostname });
    }
  });

  it('puts a proxy in front that passes WebSocket upgrades to both replicas', () => {
    const nginx = readFileSync(join(root, 'deploy', 'nginx.conf'), 'utf8');
    for (const [name] of replicas) expect(nginx).toContain(`server ${name}:8080;`);
    expect(nginx).toMatch(/proxy_set_header Upgrade \$http_upgrade;/);
    expect(nginx).toMatch(/proxy_set_header Connection \$connection_upgrade;/);
  });
});
