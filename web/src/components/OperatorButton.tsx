import { useId, type ButtonHTMLAttributes } from 'react';
import { operatorDenial, useIdentity } from '../identity';

/**
 * A button for an operator action. Without the operator role it is disabled and says why next to it, so nobody
 * types a reason only to learn "No permission".
 */
export function OperatorButton({ children, onClick, ...rest }: ButtonHTMLAttributes<HTMLButtonElement>) {
  const denial = operatorDenial(useIdentity());
  const reasonId = useId();
  if (!denial) {
    return (
      <button type="button" onClick={onClick} {...rest}>
        {children}
      </button>
    );
  }
  return (
    <span className="denied">
      <button type="button" {...rest} disabled aria-describedby={reasonId}>
        {children}
      </button>{' '}
      <span id={reasonId} className="reason">
        {denial}
      </span>
    </span>
  );
}
