import { useState } from 'react';
import { JobPauseBanner } from '../components/JobPauseBanner';
import { BulkBar } from '../components/BulkBar';
import { JobMatrix } from '../components/JobMatrix';
import { LiveIndicator } from '../components/Live';
import { RunsList } from '../components/RunsList';
import { type LiveState, usePageTitle, worst } from '../hooks';
import { Link } from '../router';

/** One job's history: its runs, with the runs list's filters. */
export function JobRuns({ jobKey }: { jobKey: string }) {
  const [runsLive, setRunsLive] = useState<LiveState>('connecting');
  const [matrixLive, setMatrixLive] = useState<LiveState>('connecting');
  usePageTitle(`Runs of ${jobKey}`);
  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/jobs">Jobs</Link> › <span aria-current="page">Job {jobKey}</span>
      </nav>
      <div className="page-head">
        <h1 tabIndex={-1} id="job-runs-title">
          Runs of {jobKey}
        </h1>
        <LiveIndicator state={worst(runsLive, matrixLive)} />
      </div>
      <JobPauseBanner jobKey={jobKey} />
      <p>
        <Link to={`/backfills?${new URLSearchParams({ job: jobKey })}`}>Backfills of {jobKey}</Link>
      </p>
      <JobMatrix jobKeys={[jobKey]} onLive={setMatrixLive} />
      <h2 id="job-runs-list">Runs</h2>
      <BulkBar jobKey={jobKey} />
      <RunsList jobKey={jobKey} titleId="job-runs-list" onLive={setRunsLive} />
    </>
  );
}
