import type { McpTool } from './tool.ts';

/** Every tool, in the order tools/list shows them (spec E5). */
export const TOOLS: McpTool[] = [];
