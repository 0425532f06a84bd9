// The service processes sharing one store are nodes. Each holds a lease there that it renews while
// it runs; the calls it registers or serves are its own. A lease is held under an epoch (a fencing
// token, new each time the node takes its lease) and each call records the epoch of its owner's
// lease. A node whose lease has run out is dead: a live node takes its lease over (the row goes),
// then finishes its calls — and a call is finished by another node only while no lease row of its
// owner's epoch exists, checked in the transaction that writes it. A stalled node whose lease was
// taken over cannot renew that epoch: it learns it at its next beat, ends the calls it still
// serves, and takes a new lease (call/runtime.ts). One whose lease ran out but was not taken over
// renews it and keeps its calls.

export interface NodeLeases {
  /**
   * Takes the node's lease under a new `epoch` until `until` (epoch ms); a lease this node id held
   * before (its previous run) is taken over. `url` is where peers reach it.
   */
  acquire(nodeId: string, epoch: string, now: number, until: number, url: string | null): Promise<void>;
  /**
   * Extends the lease of this epoch until `until`; false when it was taken over or given up (the node was taken for
   * dead).
   */
  renew(nodeId: string, epoch: string, now: number, until: number, url: string | null): Promise<boolean>;
  /** Gives the lease of this epoch up: a clean shutdown, whose calls are already final. */
  release(nodeId: string, epoch: string): Promise<void>;
  /** The nodes whose lease runs at `now`. */
  alive(now: number): Promise<string[]>;
  /** Where a node whose lease runs at `now` is reached; null when it is dead or gave no address. */
  urlOf(nodeId: string, now: number): Promise<string | null>;
  /**
   * Takes over the leases that ran out before `now` (their rows go: their holders can no longer
   * renew them, and their calls may be finished); returns how many.
   */
  forgetExpired(now: number): Promise<number>;
}
