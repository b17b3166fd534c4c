// msgpackr requires 'msgpackr-extract' in a try/catch and uses its JavaScript decoder when it throws.
throw new Error('msgpackr-extract (native acceleration) is not installed in trainsync');
