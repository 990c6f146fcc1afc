import fastJson from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';
import { z } from 'zod';

/**
 * Response bodies are written by fast-json-stringify functions compiled, once per
 * route and status, from the JSON Schema of the route's zod response schema (the
 * same document /openapi.json shows). Like Fastify's default serializer they emit
 * only the properties the schema names and refuse a body that lacks a required one.
 */
export const responseSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema, method, url }) => {
  const jsonSchema = z.toJSONSchema(schema, { io: 'output', target: 'draft-07', unrepresentable: 'any' });
  try {
    return fastJson(jsonSchema as Parameters<typeof fastJson>[0]);
  } catch (error) {
    throw new Error(`cannot compile the response schema of ${method} ${url}`, { cause: error });
  }
};
