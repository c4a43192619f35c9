import { useState } from 'react';
import { PAUSE_JOB, RESUME_JOB } from '../../../schema/documents/operator.js';
import { JOB_PAUSE } from '../api/operations';
import { useApi, useQuery } from '../api/typed';
import { formatTime } from '../format';
import { operatorDenial, useIdentity } from '../identity';
import { ReasonDialog } from './ActionDialogs';

/**
 * Whether the job is paused (who, why, since when), and Pause / Resume for an operator only: createRun refuses a
 * paused job's runs, its backfills hold, loads under way finish.
 */
export function JobPauseBanner({ jobKey }: { jobKey: string }) {
  const api = useApi();
  const operator = operatorDenial(useIdentity()) === null;
  const { data, reload } = useQuery(JOB_PAUSE, { jobKey });
  const [asking, setAsking] = useState(false);
  const job = data?.jobPause;
  if (!job) return null;
  const action = job.paused ? 'Resume' : 'Pause';
  return (
    <>
      {job.paused ? (
        <section className="banner warn" aria-labelledby="job-paused-title" data-testid="job-paused">
          <h2 id="job-paused-title">Paused</h2>
          <p>
            Paused since {formatTime(job.pausedAt)} by {job.pausedBy}: {job.pauseReason}. New runs are refused (JOB_PAUSED) and its
            backfills hold; loads under way finish.
          </p>
          {operator && (
            <button type="button" onClick={() => setAsking(true)}>
              Resume job
            </button>
          )}
        </section>
      ) : (
        operator && (
          <p>
            <button type="button" onClick={() => setAsking(true)}>
              Pause job
            </button>
          </p>
        )
      )}
      {asking && (
        <ReasonDialog
          title={`${action} ${jobKey}`}
          confirmLabel={`${action} job`}
          onClose={() => setAsking(false)}
          onConfirm={async (reason) => {
            await api.request(job.paused ? RESUME_JOB : PAUSE_JOB, { input: { jobKey, reason } });
            reload();
          }}
        >
          <p>
            {job.paused
              ? 'createRun takes the job’s runs again and its backfills go on.'
              : 'createRun will refuse the job’s new runs (NiFi waits and asks again) and its backfills will hold; loads under way finish.'}
          </p>
        </ReasonDialog>
      )}
    </>
  );
}
