// SPDX-License-Identifier: Apache-2.0
// Types of frond-client (index.js says what each call does).

export declare const VERSION: string;

export declare class FrondError extends Error {
  code: string;
  status: number;
}

export type Id = bigint | string;

export interface SegmentOptions {
  minRange?: number;
  maxRange?: number;
  preload?: number;
  target?: number;
  validity?: number;
}

export interface ClientOptions extends SegmentOptions {
  timeout?: number;
  retries?: number;
  backoff?: number;
  backoffMax?: number;
  token?: string;
  strings?: boolean;
}

export interface SegmentStats {
  ranges: number;
  issued: number;
  dropped: number;
  rangeSize: number;
  buffered: number;
}

export declare class Segment {
  readonly name: string;
  next(): Promise<Id>;
  tryNext(): Id | null;
  stats(): SegmentStats;
  close(): void;
}

export declare class Client {
  constructor(servers?: string | string[], options?: ClientOptions);
  next(): Promise<Id>;
  nextBatch(n: number): Promise<Id[]>;
  tag(name: string, options?: SegmentOptions): Segment;
  range(name: string, count: number): Promise<{ start: bigint; end: bigint }>;
  format(name: string, count?: number): Promise<string[]>;
  decode(s: string | bigint, format?: string): Promise<Record<string, unknown>>;
  stats(): {
    calls: number;
    failovers: number;
    retries: number;
    tags: Record<string, SegmentStats>;
  };
  close(): void;
}
