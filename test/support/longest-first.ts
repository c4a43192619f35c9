// The order in which `vitest run` starts the test files when it runs several tiers (`npm test`).
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The tiers by how long their longest files take, longest first: process files take half a minute each and up to
 * three; unit files a fraction of a second but for the spec's exhaustive exploration (about a minute of CPU), so unit
 * goes before api and domain, whose many files of a few seconds fill in at the end. A tier not named here (a new
 * one) goes first.
 */
const TIERS_LONGEST_FIRST = ['process', 'nifi', 'ha', 'browser', 'openlineage', 'idp', 'unit', 'api', 'domain'];

/**
 * With two workers a run lasts until its last file ends, so the long files must start first and the short ones fill
 * in at the end. vitest's own order runs the tiers in name order (api … process, unit) and, in a clean clone (no
 * cached durations), a tier's larger files first: a long process file with a short source, started late, ran alone
 * for minutes. This order takes the tiers longest first, and within a tier the files whose last duration vitest
 * cached longest first (files without one before them, then the larger first, as vitest does).
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache } = this.ctx;
    const rank = (spec: TestSpecification) => {
      const tier = TIERS_LONGEST_FIRST.indexOf(spec.project.name);
      const key = `${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`;
      const cached = cache.getFileTestResults(key);
      return [tier, cached ? 1 : 0, -(cached?.duration ?? 0), -(cache.getFileStats(key)?.size ?? 0)];
    };
    const ranks = new Map(files.map((spec) => [spec, rank(spec)]));
    return [...files].sort((a, b) => {
      const [x, y] = [ranks.get(a)!, ranks.get(b)!];
      const differs = x.findIndex((value, i) => value !== y[i]);
      return differs === -1 ? 0 : x[differs]! - y[differs]!;
    });
  }
}
