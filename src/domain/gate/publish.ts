import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DomainError } from '../../contract/errors.js';
import { dateOfColumn } from './business-date.js';
import { evidenceOf, notReadyDetails, notReadyMessage, readiness, type Evidence } from './ledger.js';
import { lockPublication } from './locks.js';
import { inOneTransaction } from '../../db/operation.js';

export interface PublishCommand {
  consumer: string;
  businessDate: string;
  output: Record<string, unknown>;
  actor: string;
}

export interface PublicationRecord {
  consumer: string;
  businessDate: string;
  output: unknown;
  outputHash: string;
  publishedBy: string;
  publishedAt: Date;
  evidence: Evidence[];
}

export interface PublishResult {
  published: boolean;
  publication: PublicationRecord;
}

/** A publication with its evidence (by job id), as one row. */
interface PublicationRow {
  consumer: string;
  businessDate: Date;
  output: unknown;
  outputHash: string;
  publishedBy: string;
  publishedAt: Date;
  evidence: Evidence[];
}

/** Publications of a consumer matching `where`, newest business date first, with their evidence. */
function publications(tx: Tx, consumer: string, where: Prisma.Sql, limit: number): Promise<PublicationRecord[]> {
  return tx.$queryRaw<PublicationRow[]>`
    SELECT p.consumer, p.business_date AS "businessDate", p.output, p.output_hash AS "outputHash",
           p.published_by AS "publishedBy", p.published_at AS "publishedAt",
           COALESCE((SELECT jsonb_agg(jsonb_build_object('jobId', e.job_id, 'attempt', e.attempt, 'runId', e.run_id) ORDER BY e.job_id)
                       FROM nifi_ops.gate_publication_evidence e
                      WHERE e.consumer = p.consumer AND e.business_date = p.business_date), '[]') AS evidence
      FROM nifi_ops.gate_publication p
     WHERE p.consumer = ${consumer} AND ${where}
     ORDER BY p.business_date DESC
     LIMIT ${limit}`.then((rows) => rows.map((row) => ({ ...row, businessDate: dateOfColumn(row.businessDate) })));
}

async function findPublication(tx: Tx, consumer: string, businessDate: string): Promise<PublicationRecord | null> {
  const [publication] = await publications(tx, consumer, Prisma.sql`p.business_date = ${businessDate}::date`, 1);
  return publication ?? null;
}

export const MAX_PUBLICATIONS_PAGE = 50;

export interface PublicationsQuery {
  consumer: string;
  /** Business dates from `from` to `to`, both included; either may be null (open). */
  from: string | null;
  to: string | null;
  first: number;
  /** The last business date of the previous page: this page starts before it. */
  after: string | null;
}

/** A consumer's publications, newest business date first, a page of them with their evidence. */
export async function listPublications(
  tx: Tx,
  query: PublicationsQuery,
): Promise<{ publications: PublicationRecord[]; hasNextPage: boolean }> {
  const dateRange = [
    ...(query.from === null ? [] : [Prisma.sql`p.business_date >= ${query.from}::date`]),
    ...(query.to === null ? [] : [Prisma.sql`p.business_date <= ${query.to}::date`]),
    ...(query.after === null ? [] : [Prisma.sql`p.business_date < ${query.after}::date`]),
  ];
  const rows = await publications(
    tx,
    query.consumer,
    dateRange.length ? Prisma.join(dateRange, ' AND ') : Prisma.sql`true`,
    query.first + 1,
  );
  return { publications: rows.slice(0, query.first), hasNextPage: rows.length > query.first };
}

export async function getPublication(tx: Tx, consumer: string, businessDate: string): Promise<PublicationRecord> {
  const publication = await findPublication(tx, consumer, businessDate);
  if (!publication) throw new DomainError('PUBLICATION_NOT_FOUND', { consumer, businessDate });
  return publication;
}

const evidenceKey = (evidence: Evidence[]): string =>
  evidence
    .map((e) => `${e.jobId}\u0000${e.attempt}\u0000${e.runId}`)
    .sort()
    .join('\u0001');

/**
 * publish: re-checks readiness and writes the publication with its evidence (the exact upstream attempts)
 * in one transaction, serialised on consumer + business date, so concurrent publishers write once.
 *
 * An existing publication answers every later call: the same output is a no-op (`published: false`) —
 * also after an upstream attempt failed, since a publication keeps the evidence it was made with — while
 * another output, or a newer successful attempt that would change the evidence, is 409 PUBLICATION_CONFLICT:
 * a correction must not pass for a retry.
 */
export async function publish(tx: Tx, cmd: PublishCommand): Promise<PublishResult> {
  await lockPublication(tx, cmd.consumer, cmd.businessDate);
  const output = JSON.stringify(cmd.output);
  // jsonb's text form is canonical (key order, whitespace), so equal outputs hash alike however they were sent
  const hashed = await tx.$queryRaw<Array<{ output_hash: string }>>`
    SELECT encode(sha256(convert_to(${output}::jsonb::text, 'UTF8')), 'hex') AS output_hash`;
  const outputHash = hashed[0]!.output_hash;
  const existing = await findPublication(tx, cmd.consumer, cmd.businessDate);
  if (existing && existing.outputHash !== outputHash) {
    throw new DomainError(
      'PUBLICATION_CONFLICT',
      {
        consumer: cmd.consumer,
        businessDate: cmd.businessDate,
        reason: 'OUTPUT_DIFFERS',
        publishedOutputHash: existing.outputHash,
        outputHash,
      },
      `${cmd.consumer} already published ${cmd.businessDate} with another output`,
    );
  }
  const current = await readiness(tx, cmd.consumer, cmd.businessDate);

  if (existing) {
    if (current.ready && evidenceKey(evidenceOf(current)) !== evidenceKey(existing.evidence)) {
      throw new DomainError(
        'PUBLICATION_CONFLICT',
        {
          consumer: cmd.consumer,
          businessDate: cmd.businessDate,
          reason: 'EVIDENCE_DIFFERS',
          publishedEvidence: existing.evidence,
          currentEvidence: evidenceOf(current),
        },
        `${cmd.consumer} already published ${cmd.businessDate} on other upstream runs`,
      );
    }
    return { published: false, publication: existing };
  }

  if (!current.ready) throw new DomainError('DEPENDENCIES_NOT_READY', notReadyDetails(current), notReadyMessage(current));
  const evidence = evidenceOf(current);
  // the publication first, then its evidence: a failure in either leaves neither (one transaction)
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate_publication (consumer, business_date, output, output_hash, published_by)
    VALUES (${cmd.consumer}, ${cmd.businessDate}::date, ${output}::jsonb, ${outputHash}, ${cmd.actor})`;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate_publication_evidence (consumer, business_date, job_id, attempt, run_id)
    SELECT ${cmd.consumer}, ${cmd.businessDate}::date, e.job_id, e.attempt, e.run_id
      FROM unnest(${evidence.map((e) => e.jobId)}::text[], ${evidence.map((e) => e.attempt)}::int[],
                  ${evidence.map((e) => e.runId)}::text[]) AS e(job_id, attempt, run_id)`;
  return { published: true, publication: (await findPublication(tx, cmd.consumer, cmd.businessDate))! };
}

export const publishOperation = inOneTransaction(publish);
