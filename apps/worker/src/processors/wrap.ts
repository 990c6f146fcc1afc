import { DomainError } from '@vouch/core';
import { DomainJobError } from '@vouch/jobs';

/** Carries a domain refusal across the queue as a permanent, decodable failure. */
export function domainErrors<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (error) {
      if (error instanceof DomainError) {
        throw new DomainJobError({ code: error.code, message: error.message, details: error.details });
      }
      throw error;
    }
  };
}
