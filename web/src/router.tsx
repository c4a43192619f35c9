import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react';

const listeners = new Set<() => void>();

/** Client-side navigation; the API answers every console path with index.html, so reloads work. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
}

interface Location {
  path: string;
  /** The query string without its `?` (filters live there, so back, forward and reload keep them). */
  search: string;
}

const current = (): Location => ({ path: location.pathname, search: location.search.replace(/^\?/, '') });

export function useLocation(): Location {
  const [where, setWhere] = useState(current);
  useEffect(() => {
    const update = () =>
      setWhere((old) => {
        const now = current();
        return old.path === now.path && old.search === now.search ? old : now;
      });
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return where;
}

export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={follow} {...rest} />;
}
