import { useState } from 'react';
import { JobPauseBanner } from '../components/JobPauseBanner';
import { BulkBar } from '../components/BulkBar';
import { LiveIndicator } from '../components/Live';
import { RunsList } from '../components/RunsList';
import { type LiveState, usePageTitle } from '../hooks';
import { Link } from '../router';

/** One job's history: its runs, with the runs list's filters. */
export function JobRuns({ jobKey }: { jobKey: string }) {
  const [live, setLive] = useState<LiveState>('connecting');
  usePageTitle(`Runs of ${jobKey}`);
  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Dashboard</Link> › <span aria-current="page">Job {jobKey}</span>
      </nav>
      <div className="page-head">
        <h1 tabIndex={-1} id="job-runs-title">
          Runs of {jobKey}
        </h1>
        <LiveIndicator state={live} />
      </div>
      <JobPauseBanner jobKey={jobKey} />
      <p>
        <Link to={`/backfills?${new URLSearchParams({ job: jobKey })}`}>Backfills of {jobKey}</Link>
      </p>
      <BulkBar jobKey={jobKey} />
      <RunsList jobKey={jobKey} titleId="job-runs-title" onLive={setLive} />
    </>
  );
}
