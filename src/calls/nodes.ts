// The service processes sharing one store are nodes. Each holds a lease there that it renews while
// it runs; the calls it registers or serves are its own. A node whose lease has run out is dead,
// and any live node finishes its calls — never the calls of a node that is still alive.

export interface NodeLeases {
  /** Takes the node's lease, or extends it, until `until` (epoch ms); `url` is where peers reach it. */
  renew(nodeId: string, now: number, until: number, url: string | null): Promise<void>;
  /** Gives the lease up: a clean shutdown, whose calls are already final. */
  release(nodeId: string): Promise<void>;
  /** The nodes whose lease runs at `now`. */
  alive(now: number): Promise<string[]>;
  /** Where a node whose lease runs at `now` is reached; null when it is dead or gave no address. */
  urlOf(nodeId: string, now: number): Promise<string | null>;
  /** Forgets the nodes whose lease ran out before `now`; returns how many. */
  forgetExpired(now: number): Promise<number>;
}
