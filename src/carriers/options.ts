// What both media transports take besides their socket.

export interface TransportOptions {
  /** The clock inbound audio is paced against (injected in tests). */
  now?: () => number;
  /** An agent frame could not go out: the socket had closed (counted for metrics). */
  onFrameDropped?: () => void;
}
