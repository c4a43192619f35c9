import { shortId } from '../format';
import { Link } from '../router';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An upstream attempt's run id: a link to the run page for Load Control's own runs, the producer's id as text otherwise. */
export function RunOrAttempt({ runId, source }: { runId: string; source: string | null | undefined }) {
  if (source === 'LOAD_CONTROL' && UUID.test(runId)) {
    return (
      <Link to={`/runs/${runId}`} aria-label={`Run ${runId}`}>
        {shortId(runId)}
      </Link>
    );
  }
  return <code>{runId}</code>;
}
