import { agentScore, successEnvelope } from '@vouch/schemas';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { responseSerializerCompiler } from './serializer.ts';

const compile = (schema: z.ZodType) =>
  responseSerializerCompiler({ schema, method: 'GET', url: '/x', httpStatus: '200' }) as (data: unknown) => string;

describe('response serializer', () => {
  it('writes the properties the schema names and nothing else', () => {
    const serialize = compile(successEnvelope(agentScore));
    const data = { score: 742, grade: 'A', color: '#22C55E', confidence: 0.4, state: 'established' };
    const body = { success: true, data: { ...data, internal: 'secret' } };
    expect(JSON.parse(serialize(body))).toEqual({ success: true, data });
  });

  it('keeps nullable and free-form values as they are', () => {
    const serialize = compile(z.object({ owner: z.string().nullable(), details: z.unknown().optional() }));
    expect(JSON.parse(serialize({ owner: null, details: { a: [1, 'b'] } }))).toEqual({
      owner: null,
      details: { a: [1, 'b'] },
    });
  });

  it('refuses a body that lacks a required property', () => {
    const serialize = compile(z.object({ a: z.string() }));
    expect(() => serialize({})).toThrow(/"a" is required/);
  });
});
