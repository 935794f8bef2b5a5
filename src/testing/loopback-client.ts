// HTTP clients on this machine told apart as the service tells any client apart with no proxy in front:
// by the address each one connects from (Linux answers the whole of 127.0.0.0/8 on loopback).
import { Agent, fetch } from 'undici';

export type LoopbackClient = {
  address: string;
  get(url: string, headers?: Record<string, string>): ReturnType<typeof fetch>;
  close(): Promise<void>;
};

/** A client whose connections leave from `address` (127.0.0.2, 127.0.0.3 …), the service's `request.ip`. */
export function clientFrom(address: string): LoopbackClient {
  const dispatcher = new Agent({ localAddress: address });
  return {
    address,
    get: (url, headers = {}) => fetch(url, { dispatcher, headers }),
    close: () => dispatcher.close(),
  };
}
