import { useEffect, useRef, useState } from 'react';
import { AlertToasts } from './components/AlertToasts';
import { Announcer } from './components/Live';
import { IdentityProvider, useIdentity } from './identity';
import { chooseTimeZone, timeZone, type TimeZoneChoice as Zone } from './format';
import { TimeZoneChoice } from './components/TimeZoneChoice';
import { usePageTitle } from './hooks';
import { Dashboard } from './pages/Dashboard';
import { BackfillDetail } from './pages/BackfillDetail';
import { Backfills } from './pages/Backfills';
import { GatePage } from './pages/GatePage';
import { JobRuns } from './pages/JobRuns';
import { Jobs } from './pages/Jobs';
import { Readiness } from './pages/Readiness';
import { RunDetail } from './pages/RunDetail';
import { SignIn } from './pages/SignIn';
import { Link, useLocation } from './router';
import { useSessionState } from './session';

function Page({ path }: { path: string }) {
  const run = /^\/runs\/([^/]+)$/.exec(path);
  if (path === '/') return <Dashboard />;
  if (run) return <RunDetail key={run[1]} runId={decodeURIComponent(run[1]!)} />;
  if (path === '/readiness') return <Readiness />;
  if (path === '/jobs') return <Jobs />;
  const job = /^\/jobs\/([^/]+)$/.exec(path);
  if (job) return <JobRuns key={job[1]} jobKey={decodeURIComponent(job[1]!)} />;
  if (path === '/backfills') return <Backfills />;
  const backfill = /^\/backfills\/([^/]+)$/.exec(path);
  if (backfill) return <BackfillDetail key={backfill[1]} backfillId={decodeURIComponent(backfill[1]!)} />;
  const gate = /^\/gates\/([^/]+)$/.exec(path);
  if (gate) return <GatePage key={gate[1]} consumer={decodeURIComponent(gate[1]!)} />;
  return <NotFound />;
}

function NotFound() {
  usePageTitle('Page not found');
  return (
    <>
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        <Link to="/">Go to the dashboard</Link>.
      </p>
    </>
  );
}

/** Who is signed in, with the roles the token grants. */
function SignedInAs() {
  const { identity } = useIdentity();
  if (!identity) return null;
  return (
    <p className="identity">
      Signed in as <strong>{identity.name}</strong> <span className="muted">({identity.roles.join(', ') || 'no role'})</span>
    </p>
  );
}

export function App() {
  const { session } = useSessionState();
  const { path } = useLocation();
  const main = useRef<HTMLElement>(null);
  // every time on every page is formatted in this zone: choosing another renders them all again
  const [zone, setZone] = useState(timeZone);
  const choose = (choice: Zone) => {
    chooseTimeZone(choice);
    setZone(choice);
  };
  const first = useRef(true);

  // after a navigation, move focus to the new page's heading so screen readers start there
  // biome-ignore lint/correctness/useExhaustiveDependencies: path is what the effect runs for, not what it reads
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const heading = main.current?.querySelector<HTMLElement>('h1');
    heading?.focus();
    window.scrollTo(0, 0);
  }, [path]);

  if (!session) return <SignIn />;
  return (
    <IdentityProvider>
      <Announcer>
        <a className="skip" href="#main">
          Skip to content
        </a>
        <header className="top">
          <Link to="/" className="brand">
            Load Control
          </Link>
          <nav aria-label="Main">
            <ul>
              <li>
                <Link to="/" aria-current={path === '/' ? 'page' : undefined}>
                  Dashboard
                </Link>
              </li>
              <li>
                <Link to="/jobs" aria-current={path === '/jobs' ? 'page' : undefined}>
                  Jobs
                </Link>
              </li>
              <li>
                <Link to="/readiness" aria-current={path === '/readiness' ? 'page' : undefined}>
                  Readiness
                </Link>
              </li>
              <li>
                <Link to="/backfills" aria-current={path.startsWith('/backfills') ? 'page' : undefined}>
                  Backfills
                </Link>
              </li>
              <li>
                {/* the same tab: GraphiQL takes the console's token from it */}
                <a href="/graphql">GraphiQL</a>
              </li>
            </ul>
          </nav>
          <TimeZoneChoice zone={zone} onChange={choose} />
          <SignedInAs />
          <button type="button" className="signout" onClick={() => session.signOut()}>
            Sign out
          </button>
        </header>
        <AlertToasts />
        <main id="main" ref={main} tabIndex={-1}>
          <Page path={path} />
        </main>
      </Announcer>
    </IdentityProvider>
  );
}
