export interface User {
  id: number;
  username: string;
  passwordHash: string;
}

export const USERNAME_MAX_LENGTH = 150;
export const PASSWORD_MAX_LENGTH = 1024;
export const PASSWORD_MIN_LENGTH = 8;
