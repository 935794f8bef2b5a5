// Several Till instances on one PostgreSQL database, as a deployment behind a load balancer runs
// them: one `till sandbox` (chain and facilitator) and N `till serve` processes, each a real child
// process on a port of its own with its role (`TILL_ROLE=api|worker|all`). Requests are spread
// round-robin over the live instances that serve the API; any instance can be SIGKILLed and
// restarted on its port. PostgreSQL only: split roles need it.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type Address, createPublicClient, type Hex, http, parseAbiItem } from 'viem';
import { loadConfig } from '../config.ts';
import { type DatabaseHandle, openDatabase } from '../db/index.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { sandboxControlsViaHttp } from '../sandbox/index.ts';
import { type SpawnedSandbox, spawnSandbox } from '../sandbox/spawn.ts';
import { createServiceStorage, freePort, sandboxOverHttp, sandboxSettings } from './environment.ts';
import { newAccount } from './payer.ts';
import { createMerchant, type TestMerchant } from './shop.ts';

export type ClusterRole = 'api' | 'worker' | 'all';

export type ClusterOptions = {
  /** One entry per instance, in order: its role. */
  roles: ClusterRole[];
  /** Settings every instance shares (after the cluster's own: database, secret key, sandbox, base URL). */
  env?: Record<string, string>;
  /** Settings of one instance on top of the shared ones (e.g. a setting only it has). */
  instanceEnv?: (index: number, role: ClusterRole) => Record<string, string>;
  /**
   * The database URL the instances are given, from the throwaway database's own URL: e.g. the same
   * database through a TCP proxy the test controls. The cluster's `db` always connects directly.
   */
  instanceDatabaseUrl?: (directUrl: string) => string;
  /** The PostgreSQL server the throwaway database is made on; TILL_TEST_POSTGRES_URL unless given. */
  postgresUrl?: string;
  /** The sandbox's fault controls (`/admin/faults`, `/admin/chain`), off unless asked for. */
  faultControls?: boolean;
  /**
   * Start the instances on an empty database, not migrated and with no merchant, as an operator's
   * first start does (in sandbox mode each instance then considers making the demo merchant).
   */
  firstStartOnEmptyDatabase?: boolean;
  /** How long an instance may take to answer 200 on /readyz; 60 s unless given. */
  readyTimeoutMs?: number;
};

/** How an instance's process ended, when the cluster did not end it itself. */
export type UnexpectedExit = { index: number; code: number | null; signal: NodeJS.Signals | null; output: string };

export type ClusterInstance = {
  readonly index: number;
  readonly role: ClusterRole;
  readonly port: number;
  /** Its own base URL, http://127.0.0.1:PORT. */
  readonly url: string;
  /** Up: started, ready, and neither killed nor exited since. */
  readonly up: boolean;
  /** Serves the API behind the balancer (role `api` or `all`). */
  readonly servesApi: boolean;
  /** The process id of its current process, if it has one. */
  readonly pid: number | undefined;
  /** How many times it has been started (1 after the cluster starts, 2 after one restart…). */
  readonly starts: number;
  /** How long its last start took, from spawning the process to 200 on /readyz (ms). */
  readonly readyMs: number | undefined;
  /** Everything its processes wrote on stdout and stderr, across restarts, in order. */
  output(): string;
};

/** A request the balancer sent, for a test's tally: which instance answered, or that none did. */
export type BalancedResponse = Response & { instance: number };

/** The USDC `Transfer` logs of the sandbox chain. */
export type UsdcTransfer = { from: Address; to: Address; value: bigint; transactionHash: Hex; blockNumber: bigint };

const CLI_ENTRY = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
/** The most of an instance's output kept in memory (the last part is kept). */
const OUTPUT_LIMIT = 8_000_000;

type Running = { child: ChildProcessByStdio<null, Readable, Readable>; exited: Promise<void>; ending: boolean };

export type Cluster = Awaited<ReturnType<typeof startCluster>>;

/**
 * Starts the sandbox, a throwaway database (migrated, with one merchant paid out to a fresh wallet,
 * unless `firstStartOnEmptyDatabase`) and the instances, and resolves once every instance answers
 * 200 on /readyz.
 */
export async function startCluster(options: ClusterOptions) {
  if (options.roles.length === 0) throw new Error('a cluster needs at least one instance');
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const spawned: SpawnedSandbox = await spawnSandbox({ faultControls: options.faultControls ?? false });
  const storage = await createServiceStorage('postgres', {
    prefix: 'till-cluster-',
    ...(options.postgresUrl ? { postgresUrl: options.postgresUrl } : {}),
  }).catch(async (error: unknown) => {
    await spawned.stop();
    throw error;
  });
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...storage.settings,
    ...sandboxSettings(spawned),
    // Every instance stands behind one public address, as behind a load balancer.
    TILL_BASE_URL: 'http://till.cluster.test',
    TILL_HOST: '127.0.0.1',
    TILL_LOG_LEVEL: 'warn',
    ...options.env,
  };
  const handle: DatabaseHandle = openDatabase(loadConfig(env));
  // On a first start the instances migrate the empty database themselves, at once.
  if (!options.firstStartOnEmptyDatabase) await migrateToLatest(handle.db);
  const newMerchant = async (name = 'Cluster shop'): Promise<TestMerchant & { wallet: Address }> => {
    const wallet = newAccount().address;
    return { ...(await createMerchant(handle.db, { name, walletAddress: wallet })), wallet };
  };
  // A merchant before the first start, so no instance makes the sandbox's demo merchant (unless asked to).
  let merchant = options.firstStartOnEmptyDatabase ? undefined : await newMerchant();

  const slots = await Promise.all(
    options.roles.map(async (role, index) => {
      const port = await freePort();
      return {
        index,
        role,
        port,
        url: `http://127.0.0.1:${port}`,
        up: false,
        starts: 0,
        readyMs: undefined as number | undefined,
        output: '',
        running: undefined as Running | undefined,
      };
    }),
  );
  const unexpectedExits: UnexpectedExit[] = [];
  let stopped = false;

  function append(slot: (typeof slots)[number], text: string) {
    slot.output += text;
    if (slot.output.length > OUTPUT_LIMIT) slot.output = slot.output.slice(-OUTPUT_LIMIT / 2);
  }

  function launch(slot: (typeof slots)[number]): Running {
    const child = spawn(process.execPath, [CLI_ENTRY, 'serve'], {
      env: {
        ...env,
        ...(options.instanceDatabaseUrl ? { TILL_DATABASE_URL: options.instanceDatabaseUrl(storage.settings.TILL_DATABASE_URL) } : {}),
        PORT: String(slot.port),
        TILL_ROLE: slot.role,
        ...options.instanceEnv?.(slot.index, slot.role),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const running: Running = { child, ending: false, exited: Promise.resolve() };
    running.exited = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        slot.up = false;
        if (slot.running === running) slot.running = undefined;
        if (!running.ending && !stopped) unexpectedExits.push({ index: slot.index, code, signal, output: slot.output.slice(-4_000) });
        resolve();
      }),
    );
    child.stdout.on('data', (chunk: Buffer) => append(slot, chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => append(slot, chunk.toString('utf8')));
    slot.starts += 1;
    slot.running = running;
    return running;
  }

  async function waitReady(slot: (typeof slots)[number], running: Running) {
    const spawnedAt = Date.now();
    const deadline = spawnedAt + readyTimeoutMs;
    let exited = false;
    void running.exited.then(() => {
      exited = true;
    });
    while (Date.now() < deadline) {
      if (exited) throw new Error(`instance ${slot.index} (${slot.role}) exited before it was ready:\n${slot.output.slice(-4_000)}`);
      const ready = await fetch(`${slot.url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
        (response) => response.status === 200,
        () => false,
      );
      // Killed while it was starting: up only if this very process is still wanted.
      if (ready && (running.ending || slot.running !== running)) throw new Error(`instance ${slot.index} (${slot.role}) was ended while it was starting`);
      if (ready) {
        slot.up = true;
        slot.readyMs = Date.now() - spawnedAt;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    running.ending = true;
    running.child.kill('SIGKILL');
    throw new Error(`instance ${slot.index} (${slot.role}) not ready within ${readyTimeoutMs} ms:\n${slot.output.slice(-4_000)}`);
  }

  async function end(slot: (typeof slots)[number], signal: NodeJS.Signals) {
    const running = slot.running;
    slot.up = false;
    if (!running) return;
    running.ending = true;
    running.child.kill(signal);
    if (signal === 'SIGTERM') {
      const timer = setTimeout(() => running.child.kill('SIGKILL'), 15_000);
      await running.exited;
      clearTimeout(timer);
    } else await running.exited;
  }

  const sandboxHttp = sandboxOverHttp(spawned);
  const chain = createPublicClient({ transport: http(spawned.rpcUrl) });

  let stopping: Promise<void> | undefined;
  function stop() {
    stopped = true;
    stopping ??= (async () => {
      await Promise.all(slots.map((slot) => end(slot, 'SIGTERM')));
      await handle.close();
      await storage.drop();
      await spawned.stop();
    })();
    return stopping;
  }

  try {
    await Promise.all(slots.map((slot) => waitReady(slot, launch(slot))));
    merchant ??= await newMerchant();
  } catch (error) {
    await stop();
    throw error;
  }

  let turn = 0;
  /** The next live instance serving the API, round-robin. */
  function pick(): (typeof slots)[number] {
    for (let tried = 0; tried < slots.length; tried++) {
      const slot = slots[turn++ % slots.length]!;
      if (slot.up && slot.role !== 'worker') return slot;
    }
    throw new Error('no instance serving the API is up');
  }

  const instances: readonly ClusterInstance[] = slots.map((slot) => ({
    index: slot.index,
    role: slot.role,
    port: slot.port,
    url: slot.url,
    servesApi: slot.role !== 'worker',
    get up() {
      return slot.up;
    },
    get pid() {
      return slot.running?.child.pid;
    },
    get starts() {
      return slot.starts;
    },
    get readyMs() {
      return slot.readyMs;
    },
    output: () => slot.output,
  }));

  return {
    instances,
    /** What every instance was started with (database URL, secret key, sandbox, shared settings). */
    env,
    /** The throwaway database's own URL (what `db` connects to). */
    databaseUrl: storage.settings.TILL_DATABASE_URL,
    /** The cluster's database, for assertions and set-up. */
    db: handle.db,
    /** The merchant made before the first start (after it with `firstStartOnEmptyDatabase`), paid out to `merchant.wallet`. */
    merchant,
    /** Another merchant, paid out to a fresh wallet. */
    newMerchant,
    sandbox: {
      ...sandboxHttp,
      url: spawned.url,
      rpcUrl: spawned.rpcUrl,
      facilitatorUrl: spawned.facilitatorUrl,
      /** Mining and chain time (`faults` beside it); only with `faultControls: true`. */
      chain: sandboxControlsViaHttp(spawned.url).chain,
      /** Every USDC `Transfer` on the chain (faucet mints come from the zero address), optionally only those to `to`. */
      async transfers(to?: Address): Promise<UsdcTransfer[]> {
        const logs = await chain.getLogs({
          address: sandboxHttp.usdcAddress,
          event: TRANSFER_EVENT,
          ...(to ? { args: { to } } : {}),
          fromBlock: 0n,
          toBlock: 'latest',
        });
        return logs.map((log) => ({
          from: log.args.from!,
          to: log.args.to!,
          value: log.args.value!,
          transactionHash: log.transactionHash,
          blockNumber: log.blockNumber,
        }));
      },
    },
    /** The base URL of the next live instance serving the API, round-robin. */
    nextUrl: () => pick().url,
    /**
     * `fetch(path)` on the next live instance serving the API, round-robin as a load balancer would,
     * skipping instances that are down. Rejects as fetch does when the connection drops (an
     * instance killed mid-request); the answer says which instance gave it.
     */
    async request(path: string, init?: RequestInit): Promise<BalancedResponse> {
      const slot = pick();
      const response = await fetch(slot.url + path, init);
      return Object.assign(response, { instance: slot.index });
    },
    /** SIGKILL of instance `index`; resolves once its process is gone. The balancer skips it at once. */
    kill: (index: number) => end(slotAt(index), 'SIGKILL'),
    /** Starts instance `index` again on its port (SIGTERM first if it still runs) and waits until it is ready. */
    async restart(index: number) {
      const slot = slotAt(index);
      await end(slot, 'SIGTERM');
      await waitReady(slot, launch(slot));
    },
    /** Processes that ended without the cluster ending them (crashes), with the end of their output. */
    unexpectedExits: () => [...unexpectedExits] as readonly UnexpectedExit[],
    /** Lines of every instance's output matching `pattern` (e.g. /unhandled|uncaught/i), prefixed with the instance's index. */
    grepOutput(pattern: RegExp): string[] {
      return slots.flatMap((slot) =>
        slot.output
          .split('\n')
          .filter((line) => pattern.test(line))
          .map((line) => `[${slot.index}] ${line}`),
      );
    },
    /** Stops every instance (SIGTERM), drops the database and stops the sandbox. */
    stop,
  };

  function slotAt(index: number) {
    const slot = slots[index];
    if (!slot) throw new Error(`no instance ${index} in a cluster of ${slots.length}`);
    return slot;
  }
}
